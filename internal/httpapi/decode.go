package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
)

// defaultBodyLimit caps request bodies of endpoints that do not set their own.
const defaultBodyLimit = 1 << 20

// decodeJSON strictly decodes the request body into dst: unknown fields,
// trailing data, wrong types and unparseable JSON are 400 invalid_request, and
// a body over limit is 413. An empty body is allowed only when optional is true.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64, optional bool) error {
	raw, err := readBody(w, r, limit)
	if err != nil {
		return err
	}
	// encoding/json would quietly turn invalid UTF-8 and unpaired surrogate
	// escapes into U+FFFD, changing the text (and what it costs to send).
	if !utf8.Valid(raw) {
		return domain.Errorf(domain.Invalid, "request body is not valid UTF-8")
	}
	lone, nul := escapes(raw)
	if lone {
		return domain.Errorf(domain.Invalid, "request body has a \\u escape of half a surrogate pair, which is not a character")
	}
	if nul {
		// Before json.Unmarshal, whose error for a NUL in a time or a
		// number would not name the field: the scan does. (A body that is
		// no JSON goes on to get the decoder's message.)
		if err := exactKeys(raw, nil); err != nil && err != errNotJSON {
			return err
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return domain.Errorf(domain.Invalid, "request body is required")
	}
	// Unmarshal rather than a Decoder: a Decoder copies the body into its own
	// buffer, and a send's body can be 72 MB. Unknown fields are exactKeys'.
	if err := json.Unmarshal(raw, dst); err != nil {
		return decodeError(err)
	}
	// encoding/json matches field names case-insensitively; the API does not.
	return exactKeys(raw, reflect.TypeOf(dst))
}

// readBody reads the request body, at most limit bytes (413 beyond). A body
// declared larger is refused before any of it is read.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if raw, ok := r.Context().Value(readBodyCtx{}).([]byte); ok {
		return raw, nil // read already, by a wrapper (withBody)
	}
	if r.ContentLength > limit {
		return nil, decodeError(&http.MaxBytesError{Limit: limit})
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var raw []byte
	var err error
	if r.ContentLength > 0 {
		// Known length: one allocation of the right size, not ReadAll's
		// doublings (which, for a 72 MB body, allocate twice that).
		raw = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, raw)
	} else {
		raw, err = io.ReadAll(body)
	}
	if err != nil {
		return nil, bodyError(w, err)
	}
	return raw, nil
}

// readBodyCtx carries a body readBody has already returned, so that a
// wrapper that needs the bytes (idempotency hashes them) and the handler
// share one copy instead of two.
type readBodyCtx struct{}

// withBody returns r carrying raw, its body as readBody returned it.
func withBody(r *http.Request, raw []byte) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), readBodyCtx{}, raw))
}

// bodyError is decodeError for a failure to read the body. When the read
// deadline has passed, the write deadline is close behind it (both count
// from the start of the request), so the answer gets a few seconds of its own.
func bodyError(w http.ResponseWriter, err error) error {
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Second))
		return domain.Errorf(domain.Invalid, "request body was not received in time")
	}
	return decodeError(err)
}

// exactKeys walks one JSON value and rejects what encoding/json lets through:
// object keys that are not exactly a json tag of the struct they decode into
// ("Message" is not "message"), a key given twice (which one counts differs
// between parsers, so a proxy and the service could disagree), and null as an
// array element that is not a pointer (["1415…", null] is not a list of
// numbers). t nil means any value. raw is one JSON value that json.Unmarshal
// accepted, so the walk is a plain scan of its bytes (a json.Decoder's
// tokens cost a send a few microseconds more); anything it does not expect is
// reported as invalid JSON.
func exactKeys(raw []byte, t reflect.Type) error {
	s := keyScan{b: raw}
	if err := s.value(t); err != nil {
		return err
	}
	return nil
}

// keyScan is exactKeys' position in the body and the path to the value at
// it (object keys and array indexes), from which error messages name fields
// as they always have: "attachments[1].filename".
type keyScan struct {
	b    []byte
	i    int
	path []pathSeg
}

// pathSeg is an object's key, or (isIdx) an array's index.
type pathSeg struct {
	key   string
	index int
	isIdx bool
}

// pathString is the path as the messages write it: each key followed by a
// dot, an index as [i] replacing the dot before it.
func (s *keyScan) pathString() string {
	var b strings.Builder
	for _, p := range s.path {
		if p.isIdx {
			str := strings.TrimSuffix(b.String(), ".")
			b.Reset()
			b.WriteString(str)
			fmt.Fprintf(&b, "[%d].", p.index)
			continue
		}
		b.WriteString(p.key)
		b.WriteByte('.')
	}
	return b.String()
}

var errNotJSON = domain.Errorf(domain.Invalid, "request body is not valid JSON")

// errNUL is keyScan.str's report of a string holding U+0000; the caller,
// which knows the field, turns it into nulIn's error.
var errNUL = errors.New("NUL in a string")

// nulIn is the answer to an input holding the NUL character: PostgreSQL
// cannot store it in any text, so no engine takes it (docs/decisions.md).
// input names it as the other errors do: `field "to[0]"`, `query parameter
// lines`.
func nulIn(input string) error {
	return domain.Errorf(domain.Invalid, "%s holds the NUL character (U+0000), which no text may hold", input)
}

// fieldName names the value at path in a JSON body: `field "to[0]"`.
func fieldName(path string) string {
	if path == "" {
		return "request body"
	}
	return fmt.Sprintf("field %q", path)
}

func (s *keyScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str scans the string at s.i (its opening quote) and returns its text.
func (s *keyScan) str() (string, error) {
	start := s.i
	escaped := false
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i++
		case '"':
			s.i++
			if !escaped {
				return string(s.b[start+1 : s.i-1]), nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return "", errNotJSON
			}
			if strings.IndexByte(out, 0) >= 0 {
				return "", errNUL
			}
			return out, nil
		}
	}
	return "", errNotJSON
}

func (s *keyScan) value(t reflect.Type) error {
	nullable := t == nil || t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.ws()
	if s.i >= len(s.b) {
		return errNotJSON
	}
	switch s.b[s.i] {
	case '"':
		_, err := s.str()
		if err == errNUL {
			return nulIn(fieldName(strings.TrimSuffix(s.pathString(), ".")))
		}
		return err
	case '{':
		s.i++
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		var seen []string // objects in requests have a handful of keys
		for {
			s.ws()
			if s.i >= len(s.b) {
				return errNotJSON
			}
			switch s.b[s.i] {
			case '}':
				s.i++
				return nil
			case ',':
				s.i++
				s.ws()
			}
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return errNotJSON
			}
			key, err := s.str()
			if err == errNUL {
				return nulIn("a key of " + fieldName(strings.TrimSuffix(s.pathString(), ".")))
			}
			if err != nil {
				return err
			}
			if slices.Contains(seen, key) {
				return domain.Errorf(domain.Invalid, "field %q appears more than once", s.pathString()+key)
			}
			seen = append(seen, key)
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					return domain.Errorf(domain.Invalid, "unknown field %q", s.pathString()+key)
				}
			} else if t != nil && t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return errNotJSON
			}
			s.i++
			s.path = append(s.path, pathSeg{key: key})
			if err := s.value(ft); err != nil {
				return err
			}
			s.path = s.path[:len(s.path)-1]
		}
	case '[':
		s.i++
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for n := 0; ; n++ {
			s.ws()
			if s.i >= len(s.b) {
				return errNotJSON
			}
			switch s.b[s.i] {
			case ']':
				s.i++
				return nil
			case ',':
				s.i++
			}
			s.path = append(s.path, pathSeg{index: n, isIdx: true})
			if err := s.value(et); err != nil {
				return err
			}
			s.path = s.path[:len(s.path)-1]
		}
	}
	// A number, true, false or null.
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
		s.i++
	}
	if string(s.b[start:s.i]) == "null" && !nullable && len(s.path) > 0 && s.path[len(s.path)-1].isIdx {
		return domain.Errorf(domain.Invalid, "field %s must be %s, not null", strings.TrimSuffix(s.pathString(), "."), jsonKind(t.Kind().String()))
	}
	return nil
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps a struct's JSON names to field types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return &domain.Error{Code: domain.Invalid, Kind: domain.TooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit)}
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return domain.Errorf(domain.Invalid, "request body must be %s", jsonKind(typeErr.Type.Kind().String()))
		}
		return domain.Errorf(domain.Invalid, "field %s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr) && strings.HasSuffix(syntaxErr.Error(), "after top-level value"):
		return domain.Errorf(domain.Invalid, "request body has data after the JSON value")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.Invalid, "request body is not valid JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return domain.Errorf(domain.Invalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return domain.Errorf(domain.Invalid, "request body is not valid JSON")
}

// escapes reports what raw, a JSON text, holds in \uXXXX escapes that no
// text may: lone, an escape of a UTF-16 surrogate that is not part of a
// high-low pair (reported first: the scan stops there); nul, the escape of
// U+0000. Backslashes only occur inside strings (anywhere else the text is
// not JSON, which the decoder reports), so the scan needs no knowledge of
// the JSON structure.
func escapes(raw []byte) (lone, nul bool) {
	for i := bytes.IndexByte(raw, '\\'); i >= 0; {
		if i+1 >= len(raw) {
			return false, nul
		}
		step := 2
		if raw[i+1] == 'u' {
			switch u := hex4(raw[i+2:]); {
			case u >= 0xD800 && u < 0xDC00: // high: a low escape must follow
				if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
					return true, nul
				}
				if lo := hex4(raw[i+8:]); lo < 0xDC00 || lo > 0xDFFF {
					return true, nul
				}
				step = 12
			case u >= 0xDC00 && u <= 0xDFFF: // low without a high before it
				return true, nul
			case u == 0:
				nul = true
				step = 6
			default:
				step = 6
			}
		}
		next := bytes.IndexByte(raw[min(i+step, len(raw)):], '\\')
		if next < 0 {
			return false, nul
		}
		i += step + next
	}
	return false, nul
}

// hex4 is the value of the four hex digits at the start of b, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	}
	return "a " + goKind
}

// noBodyLimit bounds what is read of the body of an operation that takes
// none: `{}` and some whitespace fit; a longer body is refused unread.
const noBodyLimit = 1 << 10

// noBody checks the body of an operation that takes none. An empty body
// (or only whitespace) and `{}` are accepted, as a client library that
// always sends an object would send; anything else is 400 invalid_request
// exactly as an unknown field in any other body (`{"bogus":1}`: unknown
// field "bogus"), so a client that sends fields believing they matter learns
// that they do not. A body too long to be `{}` is the same 400, not 413.
func noBody(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(w, r, noBodyLimit)
	var de *domain.Error
	if errors.As(err, &de) && de.Kind == domain.TooLarge {
		return domain.Errorf(domain.Invalid, "request body must be empty or {}: this operation takes none")
	}
	if err != nil {
		return err
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		// encoding/json takes null for any object; here it is no object.
		return domain.Errorf(domain.Invalid, "request body must be empty or {}: this operation takes none")
	}
	var none struct{}
	return decodeJSON(w, withBody(r, raw), &none, noBodyLimit, true)
}

// bodiless wraps the handler of an operation that takes no body: the body
// is checked (noBody) before the handler runs, which then sees none. The
// route table marks every such operation with it.
func bodiless(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := noBody(w, r); err != nil {
			return err
		}
		return h(w, withBody(r, []byte{}))
	}
}
