package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"switchboard/internal/domain"
)

// ConvEvent is an event of a conversation write (the inbox's
// AccountConversations events, issue 24), built by the capability ahead of
// the transaction with slots for what only the transaction knows, as an
// IDTemplate leaves one for a new row's id: the conversation's state after
// the write (the capability encodes "state":null; the store writes the
// state there, encoded by domain.AppendConversationState) and, for a read of
// a whole thread, the user's new watermark (encoded as "readThrough": and
// PlaceholderID). The store reads nothing else of it. Within a JSON payload
// neither slot can be mistaken for free text: a string's quotes are escaped.
type ConvEvent struct {
	typ      string
	audience int64
	before   []byte // up to the state
	middle   []byte // from the state to the watermark, or to the end
	after    []byte // from the watermark (hasRT)
	hasRT    bool
}

const (
	stateKey       = `"state":`
	stateSlot      = stateKey + `null`
	readThroughKey = `"readThrough":`
)

var readThroughSlot = []byte(readThroughKey + strconv.FormatInt(PlaceholderID, 10))

// NewConvEvent cuts e's payload around its slots.
func NewConvEvent(e domain.Event) (*ConvEvent, error) {
	p := e.Payload
	i := bytes.Index(p, []byte(stateSlot))
	if i < 0 {
		return nil, fmt.Errorf("store: conversation event: no %s in the payload", stateSlot)
	}
	c := &ConvEvent{typ: e.Type, audience: e.Audience, before: p[:i+len(stateKey)], middle: p[i+len(stateSlot):]}
	if j := bytes.Index(c.middle, readThroughSlot); j >= 0 {
		c.middle, c.after, c.hasRT = c.middle[:j+len(readThroughKey)], c.middle[j+len(readThroughSlot):], true
	}
	return c, nil
}

// With returns the event for state (the conversation after the write) and
// readThrough (the user's watermark; unused without its slot).
func (c *ConvEvent) With(state domain.Conversation, readThrough int64) domain.Event {
	b := make([]byte, 0, len(c.before)+len(c.middle)+len(c.after)+128)
	b = domain.AppendConversationState(append(b, c.before...), state)
	b = append(b, c.middle...)
	if c.hasRT {
		b = append(strconv.AppendInt(b, readThrough, 10), c.after...)
	}
	return domain.Event{Type: c.typ, Payload: b, Audience: c.audience}
}

// Change is what a conversation write is handed for its events: the event
// to write when the write changes the conversation (for a read: the user's
// read state), and the one to write when it does not (nil: none, as for a
// reopen of an open conversation). Which holds only the transaction knows,
// so the capability builds both and the transaction picks, as it picks
// between message.received's two variants. The zero Change writes none
// (the generators).
type Change struct {
	Changed, Unchanged *ConvEvent
	// Also are written after Changed, when it is: the personal events a
	// change causes for other people (a note's mentions, one each).
	Also []*ConvEvent
}

// write writes the event that holds, with state and readThrough in its
// slots, in the write's transaction.
func (c Change) write(ctx context.Context, tx *Tx, account int64, changed bool, state domain.Conversation, readThrough int64) error {
	e := c.Unchanged
	if changed {
		e = c.Changed
	}
	if e == nil {
		return nil
	}
	if err := addEvents(ctx, tx, account, e.With(state, readThrough)); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	for _, a := range c.Also {
		if err := addEvents(ctx, tx, account, a.With(state, readThrough)); err != nil {
			return err
		}
	}
	return nil
}
