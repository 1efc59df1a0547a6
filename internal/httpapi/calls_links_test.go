package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestRecordingLinkOnlyCanonical: a signed recording link works only as the
// exact string the server hands out; another spelling of the same account,
// generation or MAC (signs, leading zeros, other base64 padding bits in the
// MAC's last character) is the same empty 404 as a bad signature.
func TestRecordingLinkOnlyCanonical(t *testing.T) {
	const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		_, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c3+"/recordings", f.keys["acme"], "")
		url := decodeInto[struct {
			Data []map[string]any `json:"data"`
		}](t, b).Data[0]["url"].(string)
		get := func(u string) int {
			resp, err := http.Get(u)
			must(t, err)
			resp.Body.Close()
			return resp.StatusCode
		}
		if status := get(url); status != 200 {
			t.Fatalf("the canonical link: %d", status)
		}
		// url is .../recordings/{account}/{callid}/{uniqueid}/{gen}.{mac}
		head, tail, _ := strings.Cut(url, "/recordings/")
		parts := strings.Split(tail, "/")
		gen, mac, _ := strings.Cut(parts[3], ".")
		if gen != "0" || len(mac) != 43 {
			t.Fatalf("link %s: want generation 0 and a 43-character MAC", url)
		}
		build := func(account, gen, mac string) string {
			return head + "/recordings/" + account + "/" + parts[1] + "/" + parts[2] + "/" + gen + "." + mac
		}
		variants := map[string]string{
			"generation +0":   build(parts[0], "+0", mac),
			"generation -0":   build(parts[0], "-0", mac),
			"generation 00":   build(parts[0], "00", mac),
			"account +N":      build("+"+parts[0], gen, mac),
			"account 0N":      build("0"+parts[0], gen, mac),
			"MAC with a pad":  build(parts[0], gen, mac+"="),
			"MAC with a line": build(parts[0], gen, mac[:20]+"%0A"+mac[20:]),
		}
		// The last character carries 4 bits of the MAC and 2 padding bits:
		// the three other values of those bits decode to the same MAC.
		last := strings.IndexByte(b64url, mac[42])
		for bits := 1; bits < 4; bits++ {
			variants["MAC padding bits "+string(rune('0'+bits))] = build(parts[0], gen, mac[:42]+string(b64url[last^bits]))
		}
		for name, u := range variants {
			if status := get(u); status != 404 {
				t.Errorf("%s (%s): %d, want 404", name, u, status)
			}
		}
		if status := get(url); status != 200 {
			t.Errorf("the canonical link afterwards: %d", status)
		}
	})
}
