package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func startCeiling(t *testing.T, key string) *httptest.Server {
	c := newCeiling(key)
	t.Cleanup(c.close) // after the server: no send is left to queue a webhook
	srv := httptest.NewServer(c.handler())
	t.Cleanup(srv.Close)
	return srv
}

// The live scenario against the ceiling: every stream gets every event,
// timed through the ledger (the payload names the send's recipient), and the
// webhook hears of each send.
func TestLiveAgainstCeiling(t *testing.T) {
	srv := startCeiling(t, "")
	c := config{url: srv.URL, key: "any", from: "14155550100", pid: os.Getpid(), hz: 100,
		streams: 20, rate: 50, dur: time.Second, baseline: true, idle: 50 * time.Millisecond,
		webhook: true, bufSize: 64, openConc: 8}
	liveChecked(t, c, 50,
		"webhook event-to-receiver latency, from the POST's start (upper bound): p50",
		"stream event-to-client latency, from the POST's start (upper bound): p50",
		"(1000 samples)",
		"webhook event-to-receiver latency, same events, from the POST's start (upper bound): p50")
}

// A stream starts with the retry field and carries the real event's frame;
// a -key is enforced.
func TestCeilingFrame(t *testing.T) {
	srv := startCeiling(t, "sk_ceiling")
	get := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/public/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := get("wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: status %d, want 401", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	resp := get("sk_ceiling")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/public/v1/sms/messages",
		strings.NewReader(`{"from":"14155550100","to":["+12122000007"],"message":"hi"}`))
	req.Header.Set("Authorization", "Bearer sk_ceiling")
	post, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusCreated {
		t.Fatalf("send: status %d, want 201", post.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	var got strings.Builder
	for !strings.HasSuffix(got.String(), "}\n\n") {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%v after %q", err, got.String())
		}
		got.WriteString(line)
	}
	want := regexp.MustCompile(`^retry: 1000\n\nid: evt_1\nevent: AccountSMS\ndata: \{"id":"evt_1","type":"AccountSMS","timestamp":"[0-9T:-]+Z","data":\{"event":"message.sent","messageId":1,"direction":"out","line":"14155550100","number":"12122000007","numbers":\["12122000007"\],"status":"sent"\}\}\n\n$`)
	if !want.MatchString(got.String()) {
		t.Errorf("got %q", got.String())
	}
}
