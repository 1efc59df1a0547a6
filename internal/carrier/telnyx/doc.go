// Package telnyx is a client for Telnyx's v2 Messaging API: it sends SMS
// and MMS, checks the signatures of the webhooks Telnyx sends back, and
// reads the delivery receipts and inbound texts they carry.
//
// It knows nothing of Switchboard and imports only the standard library:
// numbers are E.164 strings as Telnyx writes them ("+15551234567"), statuses
// are Telnyx's own words, and what to store is the caller's business.
//
// # Sending
//
// [Client.Send] makes one POST {APIBase}/v2/messages with a bearer API key
// and a JSON body of from, to, text, media_urls, webhook_url and
// messaging_profile_id (empty ones left out), and returns the answer's
// data.id, the id Telnyx's webhooks carry for the message. It never
// retries and never follows a redirect: whether to send again is the
// caller's decision, made from the error.
//
// # Errors
//
// Every error from Send says whether Telnyx may have taken the message:
//
//   - *Error with Refused(): the answer was a 4xx other than throttling
//     (an invalid number, an unknown API key, no permission; Code, Title
//     and Detail come from Telnyx's errors array) or a 3xx. Not taken;
//     sending it again unchanged fails again.
//   - *Error with Throttled(): 429, or a 4xx with code 10011 (too many
//     requests) or 40318 (message queue full). Not taken; wait (RetryAfter,
//     when the answer said) and send it again.
//   - ErrNotSent: nothing of the request was written. The Message was
//     invalid, the connection was refused, the TLS handshake or the dial
//     failed or timed out, or the context ended first. Not taken.
//   - ErrUnknown: the request was written, then came a timeout, a lost
//     connection, a 5xx (an *Error that also matches ErrUnknown) or a 2xx
//     without a readable data.id. Telnyx may have taken the message; its
//     webhooks, if any come, settle it.
//
// Test with errors.As(err, &e) for *Error and errors.Is(err, ErrNotSent) or
// errors.Is(err, ErrUnknown); a 5xx *Error matches ErrUnknown. A dial
// failure is told from an unknown outcome by an httptrace hook, not by the
// error's text: if the transport wrote the request's headers (even into a
// buffer) before failing, the outcome counts as unknown; if it never did,
// the error wraps ErrNotSent. Go's transport itself re-sends a POST only
// when nothing of it was written.
//
// Errors never contain the API key: it travels in a header, no error
// repeats the request, and an answer that echoes the key has it replaced.
// Answers are read up to 1 MiB; a longer 2xx is an unknown outcome.
//
// # Webhooks
//
// Telnyx signs each webhook with the account's Ed25519 key over
// timestamp + "|" + body, sending the base64 signature in
// Telnyx-Signature-Ed25519 and the unix timestamp in Telnyx-Timestamp.
// [Verify] checks both against the public key ([ParsePublicKey] reads it as
// the portal shows it, under Keys & Credentials, Public Key) and rejects a
// timestamp more than five minutes from the receiver's clock, either way,
// so a captured webhook cannot be replayed later. [Client.VerifyRequest]
// does the same for an *http.Request, reading at most 256 KiB of body. An
// error wraps ErrSignature, ErrStale or ErrTooLarge; the handler should
// answer 403 (413) and change nothing. Within the five minutes a replay
// passes; Event.ID is the same on every delivery of an event, for callers
// that must deduplicate.
//
// [ParseEvent] reads a verified body. message.sent and message.finalized
// give a [Receipt] (payload.id, payload.to[0] and its status, unmapped, and
// payload.errors); message.received gives an [Inbound] (payload.from,
// payload.to[0], payload.cc, payload.text, payload.media[].url). Every other
// event type is returned with only its envelope, for the caller to
// acknowledge and ignore; message.read is among them.
//
// # Tests
//
// Besides a fake API and keys made in the tests, peer_test.go holds the
// package to Telnyx's own Node library (pinned in e2e/package.json) when
// SWITCHBOARD_TEST_PROVIDERS=1: the library verifies webhooks this package's
// way of signing produced, Verify checks webhooks node's crypto signed, and
// the library's client sends to the fake API, whose requests Send must match.
//
// # Not supported
//
// Group MMS (POST /v2/messages/group_mms), scheduled sends, subjects, the
// encoding and type overrides, webhook_failover_url, number pools beyond
// passing MessagingProfileID, the v1 API with its HMAC signatures, and
// fetching a message's status by id. Media URLs are passed as given; the
// client does not host or check them.
package telnyx
