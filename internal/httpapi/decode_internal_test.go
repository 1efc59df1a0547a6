package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
)

// exactKeysTokens is exactKeys as it was written on json.Decoder's tokens:
// the oracle the byte scan must agree with, error for error.
func exactKeysTokens(dec *json.Decoder, t reflect.Type, path string) error {
	nullable := t == nil || t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return decodeError(err)
	}
	switch tok {
	case nil:
		if !nullable && strings.HasSuffix(path, "].") {
			return domain.Errorf(domain.Invalid, "field %s must be %s, not null", strings.TrimSuffix(path, "."), jsonKind(t.Kind().String()))
		}
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		var seen []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return decodeError(err)
			}
			key, _ := k.(string)
			if slices.Contains(seen, key) {
				return domain.Errorf(domain.Invalid, "field %q appears more than once", path+key)
			}
			seen = append(seen, key)
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					return domain.Errorf(domain.Invalid, "unknown field %q", path+key)
				}
			} else if t != nil && t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			if err := exactKeysTokens(dec, ft, path+key+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := exactKeysTokens(dec, et, fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return decodeError(err)
	}
	return nil
}

// TestExactKeysMatchesTokens checks the byte scan against the token walk
// on bodies json.Unmarshal accepts: escaped keys, duplicates spelled two
// ways, nulls in lists, nested objects and lists, whitespace everywhere.
func TestExactKeysMatchesTokens(t *testing.T) {
	type nested struct {
		Name  string            `json:"name"`
		Tags  map[string]string `json:"tags"`
		Ptrs  []*int            `json:"ptrs"`
		Inner []struct {
			N []int `json:"n"`
		} `json:"inner"`
		Any any `json:"any"`
	}
	bodies := []string{
		`{"from":"1","to":["2"],"message":"hi"}`,
		` { "from" : "1" , "to" : [ "2" , "3" ] , "message" : "a \"quoted\" \\ text" } `,
		`{"from":"1","From":"2"}`,
		`{"message":"x","message":"y"}`,
		`{"message":"x","mess\u0061ge":"y"}`,
		`{"mess\u0061ge":"x"}`,
		`{"to":["1",null]}`,
		`{"to":null}`,
		`{"attachments":[{"filename":"a","contentType":"b","content":"c"},{"filename":"a","Content":"c"}]}`,
		`{"attachments":[{"filename":"a"},null]}`,
		`{"attachments":[{"filename":"a","filename":"b"}]}`,
		"{\"to\":[\"1\"],\n\t\"message\":\"\\u00e9t\\u00e9\",\r\n\"extra\":1}",
		`{}`, `[]`, `null`, `"x"`, `12`,
	}
	nestedBodies := []string{
		`{"name":"a","tags":{"x":"1","x":"2"}}`,
		`{"tags":{"a":"1","b":null},"ptrs":[1,null,2]}`,
		`{"inner":[{"n":[1,2]},{"n":[3,null]}]}`,
		`{"inner":[{"n":[1]},{"m":1}]}`,
		`{"any":{"deep":[{"x":null,"x":1}]}}`,
		`{"any":[null,{"a":{"b":[true,false,null,-1.5e3]}}],"name":"z"}`,
		`{"inner":[{"n":[]}],"name":"q","nam\u0065":"r"}`,
	}
	check := func(body string, dst any) {
		t.Helper()
		if json.Unmarshal([]byte(body), dst) != nil {
			return // decodeJSON stops before exactKeys
		}
		typ := reflect.TypeOf(dst)
		want := exactKeysTokens(json.NewDecoder(bytes.NewReader([]byte(body))), typ, "")
		got := exactKeys([]byte(body), typ)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", body, got, want)
		}
	}
	for _, b := range bodies {
		check(b, &sendRequestJSON{})
	}
	for _, b := range nestedBodies {
		check(b, &nested{})
	}
}

// BenchmarkDecodeSend measures decodeJSON on send bodies: a short text, a
// text written with \u escapes, and one 5 MB attachment (base64, so 6.7 MB
// of body).
func BenchmarkDecodeSend(b *testing.B) {
	attachment := strings.Repeat("QUJD", 5<<20/3)
	for _, c := range []struct{ name, body string }{
		{"short", `{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"Your appointment is tomorrow at 9:00."}`},
		{"escaped", `{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"R\u00e9sum\u00e9 \ud83d\ude00 \"quoted\"\nnext line"}`},
		{"attachment", `{"from":"14155550100","to":["+1 (212) 555-0100"],"message":"see","attachments":[{"filename":"a.png","contentType":"image/png","content":"` + attachment + `"}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
				var req sendRequestJSON
				if err := decodeJSON(httptest.NewRecorder(), r, &req, sendBodyLimit, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeNUL: a string holding U+0000 (written \u0000: a 0x00 byte is not
// JSON) is refused naming its field, wherever it is and whatever the field
// decodes into (a time, whose own error would name nothing); the text
// `\u0000` (an escaped backslash before "u0000") is no NUL.
func TestDecodeNUL(t *testing.T) {
	type body struct {
		Message string            `json:"message"`
		To      []string          `json:"to"`
		Since   time.Time         `json:"since"`
		Tags    map[string]string `json:"tags"`
		Inner   []struct {
			Name string `json:"name"`
		} `json:"inner"`
	}
	for _, c := range []struct{ body, want string }{
		{`{"message":"a\u0000b"}`, `field "message" holds the NUL character (U+0000)`},
		{`{"to":["1","\u0000"]}`, `field "to[1]" holds the NUL character`},
		{`{"since":"2026-01-01T00:00:00Z\u0000"}`, `field "since" holds the NUL character`},
		{`{"inner":[{"name":"x"},{"name":"\u00e9\u0000"}]}`, `field "inner[1].name" holds the NUL character`},
		{`{"tags":{"a\u0000":"x"}}`, `a key of field "tags" holds the NUL character`},
		{`{"message" "x\u0000"}`, `request body is not valid JSON`},
		{`{"message":"a\\u0000b"}`, ``},
		{`{"message":"\\\u0000"}`, `field "message" holds the NUL character`},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		err := decodeJSON(httptest.NewRecorder(), r, &body{}, defaultBodyLimit, false)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
}
