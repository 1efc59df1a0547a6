// Package kannel is the carrier driver for a Kannel SMS gateway (bearerbox +
// smsbox, version 1.4.x as packaged by Debian).
//
// # Sending
//
// [Driver.Send] issues one HTTP GET to smsbox's sendsms interface
// (/cgi-bin/sendsms) with username, password, from, to, text, charset=UTF-8,
// coding, dlr-mask, dlr-url and, when configured, smsc. smsbox answers only
// once bearerbox has taken the message (immediate-sendsms-reply must stay at
// its default, false), so the answer is meaningful:
//
//	202 "0: Accepted for delivery"     accepted
//	202 "3: Queued for later delivery" accepted (no SMSC connected yet; bearerbox stores it)
//	anything else                      an error wrapping carrier.ErrUnavailable
//
// Network errors and timeouts also wrap carrier.ErrUnavailable. A timeout is
// an ambiguous outcome (Kannel may have taken the message); the Carrier
// contract treats it as not accepted. Errors never contain the sendsms URL,
// because its query carries the Kannel password.
//
// Text is always sent as UTF-8. When it is GSM-7 representable (as decided by
// package segment, the same rule that prices it) it goes with coding=0 and
// Kannel converts it to the GSM alphabet; otherwise with coding=2 and Kannel
// converts it to UCS-2. Sending non-GSM text with coding=0 would make Kannel
// replace every unrepresentable character with '?'.
//
// Kannel is SMS-only. A message with media, or addressed to a group thread
// (len(To) > 1), is sent as plain SMS: the media URLs are appended to the
// text, each on its own line, and the same text goes to every recipient in a
// single sendsms call (Kannel accepts several space-separated numbers in
// "to"). Kannel sends one SMS per recipient; nobody sees the others, so there
// is no group thread on the handset. smsbox's answer to a multi-recipient
// call reflects bearerbox's answer for the first recipient only.
//
// # Delivery reports
//
// Every message asks for all five Kannel DLR types (dlr-mask=31) with a
// dlr-url under CallbackURL:
//
//	<CallbackURL>/dlr?id=<message id>&secret=<Secret>&type=%d&reply=%A&ts=%T
//
// The handler turns each report into a carrier.Receipt whose Status is the
// name of Kannel's DLR type, which is Kannel's own vocabulary (the user
// guide's "SMS Delivery Reports" chapter), passed through unmapped:
//
//	1  delivered     delivered to the phone
//	2  undelivered   not delivered to the phone (failure)
//	4  buffered      queued on the SMSC (intermediate)
//	8  smsc_submit   accepted by the SMSC (intermediate)
//	16 smsc_reject   rejected by the SMSC (failure)
//
// An unknown type n is passed on as "dlr_<n>". For the two failures, Error is
// the SMSC's answer (%A), or the status word when the SMSC gave none; it is
// empty otherwise. At is the report's time (%T) or, when absent, the time it
// arrived. Reports for one message can arrive out of order (Kannel fetches
// dlr-urls concurrently: with the fake SMSC, "delivered" often arrives before
// "smsc_submit"), so whoever stores receipts must not let an intermediate
// status replace a final one. A group send produces one report per recipient,
// all carrying the same message id.
//
// # Inbound texts
//
// Kannel hands inbound (MO) texts to an sms-service whose get-url points at
// <CallbackURL>/inbound; [SMSService] prints the exact kannel.conf group. It
// uses %b (the message bytes, URL-encoded, whitespace intact) with %c/%C
// (coding and charset) rather than %a, which squeezes spaces. The handler
// decodes UTF-8, UTF-16BE (UCS-2), WINDOWS-1252 and ISO-8859-1. Numbers are
// normalized to digits (a leading '+' is dropped; anything else that is not a
// digit is rejected with 400). The sms-service sets max-messages = 0 and
// omit-empty = true and the handler answers 200 with an empty body, so Kannel
// never texts a reply back to the sender.
//
// # Handler contract
//
// [Driver.Handler] serves GET /dlr and GET /inbound relative to its mount
// point; mount it with http.StripPrefix:
//
//	mux.Handle("/carrier/kannel/", http.StripPrefix("/carrier/kannel", d.Handler(sink)))
//
// Both routes check the secret query parameter in constant time (401 on
// mismatch; the secret is never logged), refuse queries over 64 KiB (414),
// answer 400 to malformed parameters, 500 when the sink fails and 200 with an
// empty body once the sink has stored the event. smsbox retries any answer
// other than 200/202 only if its group sets http-request-retry (and
// http-queue-delay); set them, or a sink failure loses the event. One smsbox
// thread works through the retry queue, one request per http-queue-delay,
// and the queue lives in smsbox's memory.
//
// # Kannel configuration
//
// The parts of kannel.conf this driver relies on (kanneltest writes the same):
//
//	group = core
//	dlr-storage = internal        # or a database; required for DLRs
//	group = smsbox
//	http-request-retry = 10       # retry dlr-url/get-url on non-2xx
//	http-queue-delay = 5
//	mo-recode = true              # optional: UCS-2 MO recoded to UTF-8
//	group = sendsms-user
//	max-messages = 255            # long texts are split, not truncated
//	concatenation = true
//	group = smsc                  # every smsc group needs an smsc-id for DLRs
//	smsc-id = ...
//
// plus the sms-service group from [SMSService]. The Secret appears in
// kannel.conf and in every dlr-url Kannel stores, so treat Kannel's
// configuration, DLR storage and logs as holding it.
package kannel
