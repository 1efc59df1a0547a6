package store

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"switchboard/internal/domain"
)

// IDTemplate is data that names the row a write creates, whose id only the
// write's transaction learns: the store writes Before, the id in decimal,
// then After, and reads neither. It is how a capability hands the store an
// event payload or an Idempotency-Key record that names a new message or
// schedule: as data, built by the capability ahead of the transaction,
// never as a function for the store to run inside it.
type IDTemplate struct{ Before, After []byte }

// PlaceholderID is the id a caller encodes in place of the one the
// transaction will assign, for NewIDTemplate to cut out. No row has it.
const PlaceholderID int64 = math.MinInt64

// NewIDTemplate cuts data, encoded with PlaceholderID as the value that
// follows key (for example `"messageId":`), around that value. The first
// occurrence counts, so key must come before any free text of the caller's.
func NewIDTemplate(data []byte, key string) (IDTemplate, error) {
	marker := key + strconv.FormatInt(PlaceholderID, 10)
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		return IDTemplate{}, fmt.Errorf("store: id template: no %s in the data", marker)
	}
	return IDTemplate{Before: data[:i+len(key)], After: data[i+len(marker):]}, nil
}

// With returns the data naming row id.
func (t IDTemplate) With(id int64) []byte {
	b := make([]byte, 0, len(t.Before)+20+len(t.After))
	b = append(b, t.Before...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, t.After...)
}

// RowEvent is an event whose payload names the row its write creates.
type RowEvent struct {
	Type    string
	Payload IDTemplate
}

// With returns the event naming row id.
func (e RowEvent) With(id int64) domain.Event {
	return domain.Event{Type: e.Type, Payload: e.Payload.With(id)}
}
