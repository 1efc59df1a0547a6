package main

import (
	"bytes"
	"errors"
	"io"
)

// sseEvent is one dispatched Server-Sent Events message. Its slices are the
// parser's and stay valid only until the next call to next: thousands of
// streams each parse hundreds of events a second, so nothing is copied.
type sseEvent struct {
	ID   []byte // the last event ID buffer at dispatch (WHATWG keeps it across events)
	Type []byte // "message" when the message set none
	Data []byte // the data lines joined by LF, without the final LF
}

// maxLine bounds one line, so a broken server cannot make a client buffer
// without end: the stream's data lines are single JSON payloads of a few
// hundred bytes.
const maxLine = 1 << 20

var errLineTooLong = errors.New("sse: line longer than 1 MiB")

// sseParser reads the text/event-stream format as the WHATWG HTML standard
// ("Server-sent events", "Interpreting an event stream") defines it: lines
// end in CRLF, LF or a lone CR; a leading BOM is dropped; a line starting with
// a colon is a comment; "field: value" loses one space after the colon; a
// blank line dispatches the event, unless its data buffer is empty; "id"
// values containing NUL are ignored; "retry" takes only ASCII digits;
// unknown fields are ignored; an unfinished event at the end is discarded.
type sseParser struct {
	r          io.Reader
	buf        []byte
	start, end int
	skipLF     bool // the previous line ended in CR: a following LF belongs to it
	begun      bool // the BOM check is done

	lastID, typ, data []byte
	comments          int64  // comment lines seen (the server's keepalives)
	onComment         func() // if set, called at each comment line: an idle stream's only sign of life
	retry             int64  // the last valid retry field, -1 if none
}

// newParser reads r through a buffer of size bytes (it grows for a longer
// line, up to maxLine).
func newParser(r io.Reader, size int) *sseParser {
	return &sseParser{r: r, buf: make([]byte, size), retry: -1}
}

// next returns the next dispatched event, or the read's error (io.EOF at a
// clean end).
func (p *sseParser) next() (sseEvent, error) {
	for {
		line, err := p.line()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if len(p.data) == 0 {
				p.typ = p.typ[:0]
				continue
			}
			ev := sseEvent{ID: p.lastID, Type: p.typ, Data: p.data[:len(p.data)-1]}
			if len(ev.Type) == 0 {
				ev.Type = message
			}
			// The next event's buffers start empty; the returned slices stay
			// intact until then because they are only appended to after the
			// caller comes back.
			p.typ, p.data = p.typ[:0], p.data[:0]
			return ev, nil
		}
		p.field(line)
	}
}

var message = []byte("message")

func (p *sseParser) field(line []byte) {
	if line[0] == ':' {
		p.comments++
		if p.onComment != nil {
			p.onComment()
		}
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) { // no allocation: the compiler compares in place
	case "event":
		p.typ = append(p.typ[:0], value...)
	case "data":
		p.data = append(append(p.data, value...), '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			// Reused: the event returned before holds it only until this call.
			p.lastID = append(p.lastID[:0], value...)
		}
	case "retry":
		if n, ok := digits(value); ok {
			p.retry = n
		}
	}
}

// digits parses a non-empty run of ASCII digits.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// line returns the next line without its terminator, valid until the next
// call.
func (p *sseParser) line() ([]byte, error) {
	for {
		if p.skipLF && p.start < p.end {
			if p.buf[p.start] == '\n' {
				p.start++
			}
			p.skipLF = false
		}
		if avail := p.buf[p.start:p.end]; !p.begun && (len(avail) >= len(bom) || !bytes.HasPrefix(bom, avail)) {
			if bytes.HasPrefix(avail, bom) {
				p.start += len(bom)
			}
			p.begun = true
		}
		if p.begun {
			rest := p.buf[p.start:p.end]
			if i := bytes.IndexAny(rest, "\r\n"); i >= 0 {
				line := rest[:i]
				p.start += i + 1
				if rest[i] == '\r' {
					p.skipLF = true
				}
				return line, nil
			}
		}
		if err := p.fill(); err != nil {
			if err == io.EOF && !p.begun && p.end > p.start {
				// The input ended inside what could have been a BOM.
				p.begun = true
				continue
			}
			return nil, err
		}
	}
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// fill reads more input, first moving the unread bytes to the buffer's
// start and growing it when a line fills it.
func (p *sseParser) fill() error {
	if p.start > 0 {
		p.end = copy(p.buf, p.buf[p.start:p.end])
		p.start = 0
	}
	if p.end == len(p.buf) {
		if len(p.buf) >= maxLine {
			return errLineTooLong
		}
		p.buf = append(p.buf, make([]byte, len(p.buf))...)
	}
	n, err := p.r.Read(p.buf[p.end:])
	p.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}
