package httpapi_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/httpapi"
	"switchboard/internal/store"
)

// TestSendLargeBodiesShareABudget checks that large request bodies wait for
// room in the budget of bytes in flight (503 unavailable, nothing read or
// sent, when none comes in time), that ordinary texts never wait for it, and
// that the room comes back when a large request ends.
func TestSendLargeBodiesShareABudget(t *testing.T) {
	t.Parallel()
	const budget = 3 << 20
	f := setupSendWith(t, store.SQLite, func(c *httpapi.Config, _ *http.Server) {
		c.BodyBudget, c.BodyWait = budget, 300*time.Millisecond
	})
	// A 2 MiB attachment: over the small-body threshold, under the budget.
	content := base64.StdEncoding.EncodeToString(paddedImage(t, "image/png", 2<<20))
	large := `{"from":"` + lineMain + `","to":["` + usA + `"],"attachments":[{"filename":"a.png","contentType":"image/png","content":"` + content + `"}]}`

	// A client that sends half of a large body and stalls holds its share.
	pr, pw := io.Pipe()
	stalled, err := http.NewRequest("POST", f.url+sendPath, pr)
	must(t, err)
	stalled.ContentLength = int64(len(large))
	stalled.Header.Set("Authorization", "Bearer "+f.keys["acme"])
	done := make(chan int, 1)
	go func() {
		resp, err := apitest.Client(t).Do(stalled)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // before the server's Close waits for it
	if _, err := pw.Write([]byte(large[:len(large)/2])); err != nil {
		t.Fatal(err)
	}
	// Wait until the server has granted it its share (the gauge an operator
	// watches), so the next request surely finds the budget taken.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if largeBodyBytes(t, f.fixture) == int64(len(large)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled request never held the budget")
		}
		time.Sleep(5 * time.Millisecond)
	}

	count0 := f.sim.Count()
	status, _, body := f.post(t, f.keys["acme"], "", large)
	if status != 503 || !strings.Contains(string(body), `"unavailable"`) {
		t.Fatalf("second large body while the first holds the budget: %d %s, want 503 unavailable", status, body)
	}
	if f.sim.Count() != count0 {
		t.Fatalf("the refused request sent something")
	}
	// An ordinary text does not wait for large bodies, with or without a
	// declared length.
	small := `{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"}`
	if status, _, body := f.post(t, f.keys["acme"], "", small); status != 201 {
		t.Fatalf("small send while the budget is held: %d %s", status, body)
	}
	if status, body := postChunked(t, f, small); status != 201 {
		t.Fatalf("small chunked send while the budget is held: %d %s", status, body)
	}
	// A large chunked body counts as the largest possible one.
	if status, body := postChunked(t, f, large); status != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("large chunked send while the budget is held: %d %.200s, want 503 unavailable", status, body)
	}

	// The stalled request finishes; its share comes back.
	if _, err := pw.Write([]byte(large[len(large)/2:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if got := <-done; got != 201 {
		t.Fatalf("stalled large send: status %d, want 201", got)
	}
	if n := largeBodyBytes(t, f.fixture); n != 0 {
		t.Fatalf("large body bytes after every large request ended: %d", n)
	}
	if status, _, body := f.post(t, f.keys["acme"], "", large); status != 201 {
		t.Fatalf("large send after the budget was released: %d %.200s", status, body)
	}
}

// largeBodyBytes reads the switchboard_http_large_body_bytes gauge.
func largeBodyBytes(t *testing.T, f *fixture) int64 {
	t.Helper()
	for _, line := range strings.Split(f.scrape(t), "\n") {
		if v, ok := strings.CutPrefix(line, "switchboard_http_large_body_bytes "); ok {
			n, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return int64(n)
		}
	}
	t.Fatal("no switchboard_http_large_body_bytes in /metrics")
	return 0
}

// postChunked posts body without a Content-Length (chunked encoding).
func postChunked(t *testing.T, f *sendFixture, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", f.url+sendPath, io.MultiReader(strings.NewReader(body)))
	must(t, err)
	if req.ContentLength != 0 { // 0 with a body: length unknown, sent chunked
		t.Fatalf("request has Content-Length %d", req.ContentLength)
	}
	req.Header.Set("Authorization", "Bearer "+f.keys["acme"])
	resp, err := f.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

// TestSendBodyTimeoutAnswered checks that a client whose body stops arriving
// gets the 400 that says so, although the server's write deadline runs out
// together with its read deadline.
func TestSendBodyTimeoutAnswered(t *testing.T) {
	t.Parallel()
	f := setupSendWith(t, store.SQLite, func(_ *httpapi.Config, srv *http.Server) {
		srv.ReadTimeout, srv.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	must(t, err)
	defer conn.Close()
	body := `{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		sendPath, f.keys["acme"], len(body), body[:10]) // and then nothing
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.NewRequest("POST", f.url+sendPath, nil)
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer after the body stalled: %v", err)
	}
	apitest.Validate(t, req, resp)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "not received in time") {
		t.Fatalf("got %d %s, want 400 saying the body was not received in time", resp.StatusCode, b)
	}
}
