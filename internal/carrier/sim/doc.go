// Package sim is Switchboard's default carrier: an in-process simulator that
// needs no network and no carrier account. The demo, the tests and the
// benchmarks send through it.
//
// # Sending
//
// [Sim.Send] first waits the configured latency (a slow carrier), giving up
// early if the caller's context ends. It then answers like a carrier would:
//
//   - refused (an error wrapping [carrier.ErrUnavailable]) when the simulator
//     is down ([Sim.SetDown]), when the message has no destination, when any
//     destination starts with a fail prefix ([Sim.FailDestinations]; the
//     error names that destination), when the context ended, or after
//     [Sim.Close];
//   - otherwise accepted, with a reference "sim-1", "sim-2", … (monotonic per
//     Sim), and the message is recorded ([Sim.Sent], [Sim.Count]).
//
// # Delivery receipts
//
// Every accepted message gets exactly one receipt (also for a group send),
// carrying the message's ID, ReceiptDelay after it was accepted (0 means as
// soon as possible, but never inside Send). Its Status is "delivered", or
// "undelivered" with Error "simulated handset unreachable" when any
// destination starts with an undeliverable prefix
// ([Sim.UndeliverableDestinations]). Receipt.At is the time the receipt was
// due. The rules are those in force when the message was accepted.
//
// Receipts go to the [carrier.Sink] given to [Sim.Attach]; the sink is read
// when a receipt falls due, so attaching after sending is fine. With no sink
// attached a due receipt is dropped. A sink that returns an error is tried
// again after 100ms, 200ms, 400ms and 800ms (five tries in all); then the
// receipt is dropped and Config.Logger is told. Each try gets a context that
// ends after 30s or when the Sim is closed.
//
// Send never waits for a receipt. Pending receipts sit in one in-memory heap
// served by one scheduler goroutine, which exists only while receipts are
// pending, and at most 32 sink calls run at once. Nothing is durable: a
// receipt still pending when the process stops is lost, as with a carrier
// whose report never arrives.
//
// # Scripting
//
// All setters are safe for concurrent use and take effect for the next Send.
// The operator-facing form is one string, applied by [Sim.Configure]: a
// comma-separated list of key=value settings, for example
//
//	receipt-delay=2s,latency=0,down=false,fail=1999,1888,undeliverable=1555
//
// Keys (case-insensitive; each at most once; surrounding spaces ignored):
//
//	receipt-delay=<duration>   time from acceptance to the receipt (Go duration: 2s, 500ms, 0)
//	latency=<duration>         time every Send takes before it answers
//	down=<bool>                true, false, 1, 0, t, f (strconv.ParseBool)
//	fail=<prefix>,…            refuse messages to destinations starting with a prefix
//	undeliverable=<prefix>,…   accept, then report "undelivered"
//
// A list takes every following comma-separated item that has no "=", so
// "fail=1999,1888,down=true" sets two fail prefixes and down. A prefix is
// digits with an optional leading "+", which is dropped (destinations are
// normalized digits). An empty list ("fail=") clears it. Keys left out keep
// their current value; an empty spec changes nothing. Durations must not be
// negative, and a bare number other than 0 needs a unit. Any error (unknown
// key, repeated key, bad value) leaves the Sim unchanged. [Sim.Spec] prints
// the current settings in the same grammar.
//
// # Inbound door
//
// [Sim.Handler] serves POST /inbound (a form of from, to and text, the secret
// as "Authorization: Bearer"): serve mounts it at /carrier/sim when given
// --sim-secret, and "switchboard sim inbound" posts to it, so that a person
// can text a line of a running server; the text goes through [Sim.Inject].
//
// # Tests
//
// [Sim.Inject] hands an inbound text straight to the sink, as if someone had
// texted a line. [Sim.Sent] returns copies of the last 10,000 accepted
// messages, oldest first; [Sim.Count] counts every accepted message;
// [Sim.Pending] counts receipts not yet handed over.
//
// [Sim.Close] drops pending receipts, cancels the context of sink calls in
// progress and waits for them to return; afterwards no goroutine of the Sim
// is left. Send and Inject then fail.
package sim
