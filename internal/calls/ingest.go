package calls

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"switchboard/internal/domain"
)

// The ingest path: a parsed item (wire.go) is stored with its events, one
// at a time (Ingest) or as a batch of JSON lines (Batch, IngestBody).

// Outcome is what ingesting one item did.
type Outcome int

// Outcomes of Ingest.
const (
	Imported Outcome = iota
	Replaced
	Event
)

// Ingest stores one parsed item for accountID: a call (replacing one with
// the same id), with its events, or a real-time event.
func (s *Service) Ingest(ctx context.Context, accountID int64, it *Item) (Outcome, error) {
	if it.Event != nil {
		var err error
		if it.Event.Users, err = s.st.KnownUsers(ctx, accountID, it.Event.Users); err != nil {
			return 0, err
		}
		ev, err := domain.NewEvent(domain.EventRealTimeCalls, it.Event)
		if err != nil {
			return 0, err
		}
		return Event, s.st.AddEvents(ctx, accountID, []domain.Event{ev})
	}
	rec := it.Call
	rec.Call.AccountID = accountID
	// Users the account does not have are dropped, the call kept: one
	// UserEndedCalls event goes out per user, and an invented id could name
	// a user created later (docs/decisions.md, call history).
	known, err := s.st.KnownUsers(ctx, accountID, rec.Call.Users)
	if err != nil {
		return 0, err
	}
	rec.Call.Users = known
	var put []string
	cleanup := func() {
		for _, name := range put {
			if err := s.blobs.Delete(context.WithoutCancel(ctx), name); err != nil {
				s.log.Warn("delete unused recording", "err", err)
			}
		}
	}
	for i := range rec.Legs {
		r := rec.Legs[i].Recording
		if r == nil || r.Content == nil {
			continue
		}
		if s.blobs == nil {
			return 0, domain.Errorf(domain.Unavailable, "recordings cannot be stored: no blob store is configured")
		}
		name, err := s.blobs.Put(ctx, r.Content, r.ContentType, recordingTypes[r.ContentType])
		if err != nil {
			cleanup()
			return 0, fmt.Errorf("calls: store recording: %w", err)
		}
		put = append(put, name)
		r.Blob, r.Content = name, nil
	}
	events, err := callEvents(rec)
	if err != nil {
		cleanup()
		return 0, err
	}
	saved, err := s.st.SaveCall(ctx, rec, events)
	if err != nil {
		cleanup()
		return 0, err
	}
	if s.blobs != nil {
		for _, name := range saved.OldBlobs {
			if err := s.blobs.Delete(context.WithoutCancel(ctx), name); err != nil {
				s.log.Warn("delete replaced recording", "err", err)
			}
		}
	}
	if saved.Replaced {
		return Replaced, nil
	}
	return Imported, nil
}

// callEvents are the events an ingested (ended) call writes.
func callEvents(rec *domain.CallRecord) ([]domain.Event, error) {
	c := rec.Call
	ended := domain.CallEvent{
		Event: "call.ended", CallID: c.ID, Direction: c.Direction, Status: c.Status, CallerNumber: c.CallerNumber,
		CalledNumber: c.CalledNumber, StartTime: c.StartTime, EndTime: c.EndTime, Users: c.Users,
	}
	var out []domain.Event
	add := func(typ string, payload any) error {
		ev, err := domain.NewEvent(typ, payload)
		out = append(out, ev)
		return err
	}
	if err := add(domain.EventEndedCalls, ended); err != nil {
		return nil, err
	}
	for _, u := range c.Users {
		e := ended
		e.UserID = u
		if err := add(domain.EventUserEndedCalls, e); err != nil {
			return nil, err
		}
	}
	for _, t := range rec.Transcripts {
		err := add(domain.EventAITranscription, domain.TranscriptionEvent{
			Event: "transcript.ready", CallID: c.ID, UniqueID: t.UniqueID, Language: t.Language,
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Problem is one item that was not ingested, and why.
type Problem struct {
	Line   int    `json:"line"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

// Summary is what a batch ingest did.
type Summary struct {
	Imported int       `json:"imported"`
	Replaced int       `json:"replaced"`
	Events   int       `json:"events"`
	Skipped  int       `json:"skipped"`
	Problems []Problem `json:"problems"`
}

// MaxLineBytes bounds one line of JSON Lines (a call with its recordings).
const MaxLineBytes = 256 << 20

// Batch is a stream of numbered ingest objects, parsed in order and stored
// concurrently (the store groups concurrent writes into shared commits).
type Batch struct {
	s       *Service
	account int64
	work    chan batchItem
	wg      sync.WaitGroup
	mu      sync.Mutex
	sum     Summary
	// Progress, when set, is called after each item with the number done.
	progress func(done int)
	done     int
}

type batchItem struct {
	line int
	id   string
	it   *Item
}

// NewBatch starts a batch ingest for accountID with workers writers.
func (s *Service) NewBatch(ctx context.Context, accountID int64, workers int, progress func(done int)) *Batch {
	b := &Batch{s: s, account: accountID, work: make(chan batchItem, workers), progress: progress}
	b.sum.Problems = []Problem{}
	for range max(1, workers) {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for w := range b.work {
				out, err := s.Ingest(ctx, accountID, w.it)
				b.record(w.line, w.id, out, err)
			}
		}()
	}
	return b
}

func (b *Batch) record(line int, id string, out Outcome, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		b.sum.Skipped++
		msg := err.Error()
		var de *domain.Error
		if errors.As(err, &de) {
			msg = de.Message
		} else {
			b.s.log.Error("ingest call", "line", line, "id", id, "err", err)
			msg = "internal error storing the call"
		}
		b.sum.Problems = append(b.sum.Problems, Problem{Line: line, ID: id, Reason: msg})
	case out == Imported:
		b.sum.Imported++
	case out == Replaced:
		b.sum.Replaced++
	case out == Event:
		b.sum.Events++
	}
	b.done++
	if b.progress != nil {
		b.progress(b.done)
	}
}

// Add queues one raw object found at line.
func (b *Batch) Add(line int, raw []byte) {
	it, err := Parse(b.account, raw)
	if err != nil {
		b.record(line, idOf(raw), 0, err)
		return
	}
	id := ""
	if it.Call != nil {
		id = it.Call.Call.ID
	} else {
		id = it.Event.CallID
	}
	b.work <- batchItem{line: line, id: id, it: it}
}

// Skip records an item that could not be parsed.
func (b *Batch) Skip(line int, id, reason string) {
	b.record(line, id, 0, domain.Errorf(domain.Invalid, "%s", reason))
}

// Wait waits for every queued item and returns the summary, problems in
// line order.
func (b *Batch) Wait() Summary {
	close(b.work)
	b.wg.Wait()
	slices.SortFunc(b.sum.Problems, func(x, y Problem) int { return x.Line - y.Line })
	return b.sum
}

// idOf digs the id out of an object that failed validation, for the report.
func idOf(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	if s, ok := v.ID.(string); ok && len(s) <= 64 {
		return s
	}
	return ""
}

// ReadJSONLines feeds every non-blank line of r to b, numbering lines from 1.
func ReadJSONLines(r io.Reader, b *Batch) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		raw, err := readLine(br)
		if errors.Is(err, errLineTooLong) {
			b.Skip(line, "", "line is longer than "+strconv.Itoa(MaxLineBytes)+" bytes")
			continue
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			b.Add(line, raw)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

var errLineTooLong = errors.New("line too long")

func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			// Drop the rest of the line.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// IngestBody ingests the body of a push to the ingest endpoint: one object
// (a call or a real-time event), or JSON Lines. One object that fails is the
// request's error; in JSON Lines a bad line is reported in the summary and
// never stops the rest.
func (s *Service) IngestBody(ctx context.Context, accountID int64, raw []byte) (Summary, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return Summary{}, invalid("request body is required: one call as a JSON object, or JSON Lines")
	}
	if !bytes.Contains(trimmed, []byte("\n")) || json.Valid(trimmed) {
		it, err := Parse(accountID, trimmed)
		if err != nil {
			return Summary{}, err
		}
		out, err := s.Ingest(ctx, accountID, it)
		if err != nil {
			return Summary{}, err
		}
		sum := Summary{Problems: []Problem{}}
		switch out {
		case Imported:
			sum.Imported = 1
		case Replaced:
			sum.Replaced = 1
		case Event:
			sum.Events = 1
		}
		return sum, nil
	}
	b := s.NewBatch(ctx, accountID, 8, nil)
	if err := ReadJSONLines(bytes.NewReader(raw), b); err != nil {
		b.Wait()
		return Summary{}, err
	}
	return b.Wait(), nil
}

// AddCall queues a call built in code (the demo, generators).
func (b *Batch) AddCall(line int, rec *domain.CallRecord) {
	b.work <- batchItem{line: line, id: rec.Call.ID, it: &Item{Call: rec}}
}
