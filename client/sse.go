package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// errSSEMessageTooLong is a message longer than the parser's bound.
var errSSEMessageTooLong = errors.New("client: event stream message longer than EventsOptions.MaxMessageSize")

// sseMessage is one dispatched message of an event stream.
type sseMessage struct {
	id, event, data string
}

// sseParser reads a text/event-stream as the WHATWG HTML standard's
// "event stream interpretation" says: lines end with CRLF, LF or CR; a
// leading BOM is dropped; ":" starts a comment; "field: value" loses one
// space after the colon; a line without a colon is a field with an empty
// value; data lines accumulate joined by LF; an empty line dispatches,
// unless no data came, which only resets the event type; an incomplete
// message at the end of the stream is discarded.
//
// One message, all of its lines together (data, but also id, event,
// comments and unknown fields, until the empty line), may be at most max
// bytes, terminators not counted: a broken or hostile server cannot make
// the reader buffer without end.
type sseParser struct {
	r   *bufio.Reader
	max int
	// size is the bytes of the lines of the message being read.
	size int
	// lastID is the stream's "last event ID string": the id buffer as of
	// the last dispatch. It is what a reconnection sends as Last-Event-ID,
	// so an id of a message cut off by a disconnect never counts.
	lastID string
	// retry is the reconnection time the stream last set (0: never).
	retry time.Duration

	idBuf    string
	eventBuf string
	dataBuf  strings.Builder
	hasData  bool
	started  bool // the BOM check is done
	skipLF   bool // the previous line ended with CR: a LF next is its CRLF
	line     []byte
}

func newSSEParser(r io.Reader, lastID string, max int) *sseParser {
	return &sseParser{r: bufio.NewReaderSize(r, 32<<10), lastID: lastID, max: max}
}

// next returns the next dispatched message. Its error is the reader's
// (io.EOF when the stream ended), with any incomplete message dropped.
func (p *sseParser) next() (sseMessage, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			return sseMessage{}, err
		}
		p.size += len(line)
		if len(line) == 0 {
			p.size = 0
			p.lastID = p.idBuf
			if !p.hasData {
				p.eventBuf = ""
				continue
			}
			m := sseMessage{id: p.lastID, event: p.eventBuf, data: p.dataBuf.String()}
			if m.event == "" {
				m.event = "message"
			}
			p.eventBuf, p.hasData = "", false
			p.dataBuf.Reset()
			return m, nil
		}
		p.field(line)
	}
}

func (p *sseParser) field(line []byte) {
	if line[0] == ':' {
		return // a comment (the server's keepalive)
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte{' '})
	}
	switch string(name) {
	case "event":
		p.eventBuf = string(value)
	case "data":
		if p.hasData {
			p.dataBuf.WriteByte('\n')
		}
		p.dataBuf.Write(value)
		p.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.idBuf = string(value)
		}
	case "retry":
		if len(value) > 0 && allDigits(value) {
			if ms, err := strconv.ParseInt(string(value), 10, 64); err == nil {
				p.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	// Any other field is ignored, as the standard says.
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readLine returns the next line without its terminator. It never waits
// for the byte after a CR, so a message ending in CR is dispatched as soon
// as it arrives.
func (p *sseParser) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if !p.started {
			p.started = true
			if c == 0xEF {
				// A UTF-8 BOM (EF BB BF) is dropped once, at the start.
				if b, err := p.r.Peek(2); err == nil && b[0] == 0xBB && b[1] == 0xBF {
					p.r.Discard(2)
					continue
				}
			}
		}
		if p.skipLF {
			p.skipLF = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\r':
			p.skipLF = true
			return p.line, nil
		case '\n':
			return p.line, nil
		}
		if p.size+len(p.line) >= p.max {
			return nil, errSSEMessageTooLong
		}
		p.line = append(p.line, c)
	}
}
