// Package twilio is a client for Twilio's Programmable Messaging API: it
// sends SMS and MMS, checks the signatures of the webhooks Twilio sends
// back, and reads the status callbacks and incoming messages they carry.
//
// It knows nothing of Switchboard and imports only the standard library:
// numbers are strings as Twilio writes them ("+15551234567"), statuses are
// Twilio's own words, and what to store is the caller's business.
//
// # Sending
//
// [Client.Send] makes one POST {APIBase}/2010-04-01/Accounts/{AccountSid}/Messages.json
// with HTTP basic auth (the account SID and the auth token) and a form
// body of To, From (or MessagingServiceSid, when the Config names a
// messaging service), Body, MediaUrl once per media URL in order, and
// StatusCallback (empty ones left out). It returns the answer's sid, the
// MessageSid Twilio's status callbacks carry. It never retries and never
// follows a redirect: whether to send again is the caller's decision, made
// from the error.
//
// # Errors
//
// Every error from Send says whether Twilio may have taken the message:
//
//   - *Error with Refused(): the answer was a 4xx other than throttling
//     (21211 an invalid To, 21606 a From that cannot send, 20003 bad
//     credentials; Code, Message and MoreInfo come from Twilio's JSON
//     error), a 3xx, or a 2xx whose message is already failed or
//     undelivered (Error.SID names it). Not taken, or failed at once;
//     sending it again unchanged fails again.
//   - *Error with Throttled(): HTTP 429, or an answer carrying code 20429
//     (too many API requests), 21611 (the From number's queue is full),
//     30001 (queue overflow) or 14107 (too many replies between two
//     numbers). Not taken; wait (RetryAfter, when the answer said) and
//     send it again.
//   - ErrNotSent: nothing of the request was written. The Message was
//     invalid, the dial failed or timed out, the connection was refused,
//     the TLS handshake failed, or the context ended first. Not taken.
//   - ErrUnknown: the request was written, then came a timeout, a lost
//     connection, a 5xx (an *Error that also matches ErrUnknown), or a 2xx
//     without a readable sid. Twilio may have taken the message; its
//     status callbacks, if any come, settle it.
//
// Test with errors.As(err, &e) for *Error, then errors.Is(err, ErrNotSent)
// and errors.Is(err, ErrUnknown); every error is in exactly one of the
// four classes. "Certainly not sent" is told from "unknown" by an
// httptrace hook, not by the error's text: if the transport wrote the
// request's headers (even only into its buffer) before failing, the
// outcome is unknown; if it never did (a dial error is one such), the
// error wraps ErrNotSent. Go's transport itself re-sends a POST only when
// nothing of it was written.
//
// Errors never contain the auth token: it travels in a header, no error
// repeats the request, and an answer that echoes the token has it
// replaced. Answers are read up to 1 MiB; a longer 2xx is an unknown
// outcome.
//
// # Webhooks
//
// Twilio signs each webhook with the account's auth token: X-Twilio-Signature
// is the base64 HMAC-SHA1 of the URL it was given (scheme to query string)
// followed, without separators, by each form parameter's name and value,
// names sorted. [Signature] computes it. Where Twilio's guide is silent it
// follows Twilio's libraries (Node, Python): a name sent with several
// values is signed once per distinct value, the values sorted whatever
// order they arrived in; and sorting compares UTF-16 code units, as
// the Node library (and Java's String) does, which differs from byte order
// only between characters U+E000–U+FFFF and those above U+FFFF.
//
// [Client.VerifyRequest] reads a POST's form body (at most 64 KiB) and
// checks its signature, in constant time, against the public URL the
// caller gave Twilio, tried with and without its port as Twilio's
// libraries try it (an explicit port dropped; a missing one as :443 or
// :80). Unlike the Node library it does not also try the URL re-encoded,
// so the URL must be passed exactly as Twilio was given it. It returns the
// form only when the webhook is genuine; otherwise the error wraps
// ErrSignature (or ErrTooLarge), and the handler should answer 403 (413)
// and change nothing. Twilio's signature has no timestamp: a captured
// webhook replays, so handling one twice must be harmless (a status
// callback names the message and its status; an incoming message its
// MessageSid).
//
// [ParseStatus] reads a status callback (MessageSid and MessageStatus
// required, the status passed through unmapped, ErrorCode as a number);
// [ParseInbound] an incoming message (MessageSid, From and To required;
// Body, NumSegments, and MediaUrlN with MediaContentTypeN for N below
// NumMedia).
//
// # Tests
//
// Besides a fake API and Twilio's documented example signature,
// peer_test.go holds the package to Twilio's own Node library (pinned in
// e2e/package.json) when SWITCHBOARD_TEST_PROVIDERS=1: both compute the
// same signatures, the library's validateRequest and VerifyRequest agree
// on which URLs a signature may be over, webhooks node encodes and signs
// pass VerifyRequest over HTTP, and the library's client sends to the fake
// API, whose requests Send must match.
//
// # Not supported
//
// API keys (an SK… SID and secret) in place of the auth token; webhooks
// sent as GET or with a JSON body (bodySHA256), and webhooks signed with a
// SharedKey (X-Twilio-Webhooks-Signature-Settings), which VerifyRequest
// refuses; scheduled sends, content templates (ContentSid), ValidityPeriod,
// MaxPrice, ShortenUrls and the other optional parameters; regions and
// edges other than by setting APIBase; fetching or cancelling a message by
// its SID. Media URLs are passed as given; the client does not host or
// check them.
package twilio
