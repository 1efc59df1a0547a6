// Package carrier defines the gateway through which Switchboard hands messages to
// an SMS/MMS carrier and receives delivery receipts and inbound texts back.
package carrier

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable reports that the carrier certainly did not take the message:
// it refused it, or could not be reached before the request was written. The
// message must not be charged, and the client may be told nothing was sent.
var ErrUnavailable = errors.New("carrier: unavailable")

// ErrUnknown reports that the carrier may have taken the message: the request
// was written but no answer came back (a timeout, a connection lost after
// writing). The message must neither be charged on this alone nor reported
// as not sent; its delivery receipt, if one comes, settles it.
var ErrUnknown = errors.New("carrier: outcome unknown")

// ErrQueued reports that a carrier connection took the message into its
// durable queue, to hand to the carrier in its turn (a throughput limit, or
// a bind held by another node): it is not sent yet, it will be at most once,
// and what becomes of it reaches the Sink's Outcomes. It is neither an
// acceptance nor a refusal.
var ErrQueued = errors.New("carrier: queued")

// Message is one outbound message as handed to the carrier: one text (or MMS)
// addressed to one recipient or to a group thread.
type Message struct {
	// ID is Switchboard's message id; drivers pass it back in receipts so a
	// receipt can be matched without trusting carrier references.
	ID    int64
	From  string   // normalized line number, digits only
	To    []string // normalized destinations, digits only
	Text  string
	Media []string // public URLs of hosted attachments, in order
}

// Accepted is the carrier's answer to a message it took responsibility for.
type Accepted struct {
	// Ref is the carrier's own reference, if it gave one.
	Ref string
}

// Receipt is a delivery report for a message Switchboard sent.
type Receipt struct {
	MessageID int64
	Status    string // the carrier's own status word, passed through unmapped
	Error     string // carrier failure detail; empty on success
	At        time.Time
}

// Inbound is a text someone sent to one of the account's lines.
type Inbound struct {
	From  string // sender, normalized digits
	To    string // the line that received it, normalized digits
	Text  string
	Media []string
	// Participants lists every number on a group thread (including From);
	// empty for a one-to-one text.
	Participants []string
	At           time.Time
}

// Sink receives what the carrier reports back. Implementations must be safe for
// concurrent use and durable: when they return nil the event is stored.
type Sink interface {
	Receipt(ctx context.Context, r Receipt) error
	Inbound(ctx context.Context, in Inbound) error
}

// Outcomes is what a Sink implements to hear what became of the messages a
// connection queued (ErrQueued). Both must be durable when they return nil,
// and harmless when repeated.
type Outcomes interface {
	// Accepted records that the carrier took message id (ref: its own
	// reference): the message is sent and charged, once.
	Accepted(ctx context.Context, id int64, ref string) error
	// Refused records that the carrier will not take message id (reason:
	// its own words): the message failed, uncharged.
	Refused(ctx context.Context, id int64, reason string) error
}

// MMSChecker is a Carrier that can tell, before anything is written or
// charged, that a line's messages cannot be MMS (attachments or a group):
// an SMPP connection carries text only.
type MMSChecker interface {
	CarriesMMS(ctx context.Context, line string) error
}

// Carrier sends messages. Send returns nil error only when the carrier accepted
// the message. An error wraps ErrUnavailable only when the carrier certainly
// did not take it; any other error (ErrUnknown, or one wrapping neither) is
// treated as "may have been taken". Send must return by ctx's deadline.
type Carrier interface {
	Send(ctx context.Context, m Message) (Accepted, error)
}
