package httpapi

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"switchboard/internal/domain"
)

// callSearchJSON is the search page as encoding/json writes it through
// writeData: the oracle appendCallSearch must match byte for byte.
type callSearchJSON struct {
	Total  int64      `json:"total"`
	Limit  int        `json:"limit"`
	Offset int        `json:"offset"`
	Calls  []callJSON `json:"calls"`
}

// Strings that take every path of appendStringField: plain ASCII, quotes and
// backslashes, control characters, HTML characters (escaped by json.Marshal,
// not by writeData), multi-byte UTF-8, U+2028/U+2029 (always escaped),
// invalid UTF-8 (replaced), and text that looks like an escape.
var callJSONStrings = []string{
	"", "Alice", "+15551234567", `say "hi"`, `back\slash`, "tab\there", "nl\n", "\x00\x1f\x7f",
	"<b>&amp;</b>", "Zoë Ångström", "日本語", "line\u2028sep\u2029", "bad\xffutf8\xc3", `\u003c`, "emoji 📞",
}

func TestAppendCallMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string { return callJSONStrings[rng.IntN(len(callJSONStrings))] }
	var list []domain.Call
	for i := range 300 {
		start := time.Unix(1_700_000_000+int64(rng.IntN(30_000_000)), int64(rng.IntN(3))*int64(rng.IntN(1_000_000_000))).In(time.FixedZone("x", 3600))
		c := domain.Call{
			ID: str(), Direction: str(), Status: str(), StatusCode: rng.Int64N(1000) - 500,
			CallerType: str(), CalledType: str(), CallerName: str(), CallerNumber: str(), CalledName: str(),
			CalledNumber: str(), DialledNumber: str(), CallerIDInternal: str(), CallerIDExternal: str(),
			StartTime: start, DurationSeconds: rng.Int64N(100000), TalkTimeSeconds: rng.Int64N(100000),
			Transferred: rng.Int64N(5), Abandoned: rng.IntN(2) == 0, Recorded: rng.IntN(2) == 0,
			CalledBack: str(), Repeated: rng.Int64N(7), CallPurpose: str(), CallSentiment: str(),
		}
		if i%3 != 0 {
			end := start.Add(time.Duration(rng.IntN(5000)) * time.Second)
			c.EndTime = &end
		}
		if i%4 == 1 {
			c.Contact = &domain.ContactRef{ID: rng.Int64N(1 << 40), Name: str()}
		}
		list = append(list, c)
	}
	for _, page := range [][]domain.Call{nil, list[:1], list} {
		want := callSearchJSON{Total: 123456789, Limit: 50, Offset: 100000, Calls: make([]callJSON, len(page))}
		for i, c := range page {
			want.Calls[i] = toCallJSON(c)
		}
		wantBody, err := encodeData(want)
		if err != nil {
			t.Fatal(err)
		}
		got := appendCallSearch(nil, want.Total, want.Limit, want.Offset, page)
		if !bytes.Equal(got, wantBody) {
			i := 0
			for i < len(got) && i < len(wantBody) && got[i] == wantBody[i] {
				i++
			}
			lo := max(0, i-80)
			t.Fatalf("%d calls: differs at byte %d\n got: …%s\nwant: …%s", len(page), i, got[lo:min(len(got), i+80)], wantBody[lo:min(len(wantBody), i+80)])
		}
	}
}

func BenchmarkCallSearchEncoding(b *testing.B) {
	end := time.Unix(1_760_000_300, 0)
	c := domain.Call{
		ID: "1760000000.123", Direction: "inbound", Status: "answered", StatusCode: 200, CallerType: "external",
		CalledType: "user", CallerName: "Caller 12345", CallerNumber: "+15551234567", CalledName: "Agent 17",
		CalledNumber: "+15557654321", DialledNumber: "+15557654321", CallerIDInternal: "217", CallerIDExternal: "+15557654321",
		StartTime: time.Unix(1_760_000_000, 0), EndTime: &end, DurationSeconds: 300, TalkTimeSeconds: 280, Repeated: 1,
	}
	page := make([]domain.Call, 50)
	for i := range page {
		page[i] = c
	}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			out := callSearchJSON{Total: 821918, Limit: 50, Calls: make([]callJSON, len(page))}
			for i, c := range page {
				out.Calls[i] = toCallJSON(c)
			}
			if _, err := encodeData(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		for b.Loop() {
			appendCallSearch(make([]byte, 0, 512+640*len(page)), 821918, 50, 0, page)
		}
	})
}
