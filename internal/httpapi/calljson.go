package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
)

// A call search page is up to 500 Calls of 22 fields each, and encoding it
// through reflection was a sixth of the server's CPU on the search benchmark
// (docs/benchmarks.md, issue 13). appendCallSearch writes the same bytes as
// writeData would for a callSearchJSON (TestAppendCallMatchesEncodingJSON
// holds the two together), appending each field directly.

// appendCallSearch appends the envelope {"data":{…}} of one search page, with
// the trailing newline json.Encoder writes.
func appendCallSearch(b []byte, total int64, limit, offset int, list []domain.Call) []byte {
	return appendEnvelope(b, func(b []byte) []byte {
		b = append(b, `{"total":`...)
		b = strconv.AppendInt(b, total, 10)
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(limit), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, int64(offset), 10)
		b = append(b, `,"calls":[`...)
		for i := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCall(b, &list[i])
		}
		return append(b, "]}"...)
	})
}

// appendCall appends c as the public API's Call, field for field as callJSON
// encodes it.
func appendCall(b []byte, c *domain.Call) []byte {
	b = appendStringField(b, `{"id":`, c.ID)
	b = appendStringField(b, `,"direction":`, c.Direction)
	b = appendStringField(b, `,"status":`, c.Status)
	b = appendIntField(b, `,"statusCode":`, c.StatusCode)
	b = appendStringField(b, `,"callerType":`, c.CallerType)
	b = appendStringField(b, `,"calledType":`, c.CalledType)
	b = appendStringField(b, `,"callerName":`, c.CallerName)
	b = appendStringField(b, `,"callerNumber":`, c.CallerNumber)
	b = appendStringField(b, `,"calledName":`, c.CalledName)
	b = appendStringField(b, `,"calledNumber":`, c.CalledNumber)
	b = appendStringField(b, `,"dialledNumber":`, c.DialledNumber)
	b = appendStringField(b, `,"callerIdInternal":`, c.CallerIDInternal)
	b = appendStringField(b, `,"callerIdExternal":`, c.CallerIDExternal)
	b = appendTimeField(b, `,"startTime":`, c.StartTime)
	if c.EndTime != nil {
		b = appendTimeField(b, `,"endTime":`, *c.EndTime)
	}
	b = appendIntField(b, `,"durationSeconds":`, c.DurationSeconds)
	b = appendIntField(b, `,"talkTimeSeconds":`, c.TalkTimeSeconds)
	b = appendIntField(b, `,"transferred":`, c.Transferred)
	b = append(b, `,"abandoned":`...)
	b = strconv.AppendBool(b, c.Abandoned)
	b = append(b, `,"recorded":`...)
	b = strconv.AppendBool(b, c.Recorded)
	if c.CalledBack != "" {
		b = appendStringField(b, `,"calledBack":`, c.CalledBack)
	}
	b = appendIntField(b, `,"repeated":`, c.Repeated)
	if c.Contact != nil {
		b = appendIntField(b, `,"contact":{"id":`, c.Contact.ID)
		b = append(appendStringField(b, `,"name":`, c.Contact.Name), '}')
	}
	return append(b, '}')
}

func appendIntField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendTimeField(b []byte, name string, t time.Time) []byte {
	b = append(append(b, name...), '"')
	return append(t.UTC().AppendFormat(b, time.RFC3339Nano), '"')
}

// appendStringField appends name and s as a JSON string. Printable ASCII
// other than the quote and backslash needs no escaping, which is what call
// fields almost always hold; anything else goes through encoding/json, so
// that escapes, invalid UTF-8 and U+2028/U+2029 come out exactly as it
// writes them.
func appendStringField(b []byte, name, s string) []byte {
	b = append(b, name...)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return appendEscaped(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendEscaped(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as writeData
	if err := enc.Encode(s); err != nil {
		panic(err) // never for a string
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
