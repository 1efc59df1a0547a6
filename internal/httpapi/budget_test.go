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
	apitest.Eventually(t, "the stalled request to hold the budget", func() bool { return largeBodyBytes(t, f.fixture) == int64(len(large)) })

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

// TestSendSmallerBodiesPassWaitingLargeOnes: a large body that does not fit
// in the budget does not hold up a smaller one that does (the budget was
// first-in first-out: eight slow 70 MB uploads made a 2 MB send wait 29 s);
// the wait is measured.
func TestSendSmallerBodiesPassWaitingLargeOnes(t *testing.T) {
	t.Parallel()
	const budget = 4 << 20
	f := setupSendWith(t, store.SQLite, func(c *httpapi.Config, _ *http.Server) {
		c.BodyBudget, c.BodyWait = budget, 20*time.Second
	})
	body := func(decoded int) string {
		content := base64.StdEncoding.EncodeToString(paddedImage(t, "image/png", decoded))
		return `{"from":"` + lineMain + `","to":["` + usA + `"],"attachments":[{"filename":"a.png","contentType":"image/png","content":"` + content + `"}]}`
	}
	holding, waiting, passing := body(1600<<10), body(2200<<10), body(900<<10)
	if len(passing) <= 1<<20 || len(holding)+len(waiting) <= budget || len(holding)+len(passing) > budget {
		t.Fatalf("sizes: %d %d %d do not make the case", len(holding), len(waiting), len(passing))
	}

	// slow starts a send whose body arrives only when the returned function
	// is called; its status comes on the channel.
	slow := func(b string, first int) (finish func(), status <-chan int) {
		pr, pw := io.Pipe()
		req, err := http.NewRequest("POST", f.url+sendPath, pr)
		must(t, err)
		req.ContentLength = int64(len(b))
		req.Header.Set("Authorization", "Bearer "+f.keys["acme"])
		done := make(chan int, 1)
		go func() {
			resp, err := apitest.Client(t).Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
		go pw.Write([]byte(b[:first]))
		return func() {
			go func() {
				pw.Write([]byte(b[first:]))
				pw.Close()
			}()
		}, done
	}
	finishHolding, holdingDone := slow(holding, len(holding)/2)
	apitest.Eventually(t, "the first body to hold its share", func() bool {
		return metricValue(t, f.fixture, "switchboard_http_large_body_bytes") == float64(len(holding))
	})
	finishWaiting, waitingDone := slow(waiting, 0)
	apitest.Eventually(t, "the second body to wait for room", func() bool { return metricValue(t, f.fixture, "switchboard_http_large_body_waiting") == 1 })

	start := time.Now()
	status, _, raw := f.post(t, f.keys["acme"], "", passing)
	if took := time.Since(start); status != 201 || took > 5*time.Second {
		t.Fatalf("a body that fits while a larger one waits: %d after %v (%.200s), want 201 at once", status, took, raw)
	}
	if n := metricValue(t, f.fixture, "switchboard_http_large_body_wait_seconds_count"); n < 1 {
		t.Errorf("wait histogram count = %v, want the admitted bodies counted", n)
	}

	// The waiting body is admitted once the first ends, and both succeed.
	finishHolding()
	if got := <-holdingDone; got != 201 {
		t.Fatalf("holding send: %d", got)
	}
	apitest.Eventually(t, "the waiting body to be admitted", func() bool { return metricValue(t, f.fixture, "switchboard_http_large_body_waiting") == 0 })
	finishWaiting()
	if got := <-waitingDone; got != 201 {
		t.Fatalf("waiting send: %d", got)
	}
	apitest.Eventually(t, "the budget to empty", func() bool { return metricValue(t, f.fixture, "switchboard_http_large_body_bytes") == 0 })
}

// metricValue reads one unlabelled sample from /metrics.
func metricValue(t *testing.T, f *fixture, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(f.scrape(t), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}
