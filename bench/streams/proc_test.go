package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (a b) c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 8 0 100 0 0\n"
	got, err := parseStat([]byte(line))
	if err != nil || got != 1234+567 {
		t.Fatalf("parseStat = %d, %v; want 1801", got, err)
	}
	if _, err := parseStat([]byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("a short stat parsed")
	}
}

func TestOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if kib, err := rssKiB(os.Getpid()); err != nil || kib <= 0 {
		t.Fatalf("rssKiB = %d, %v", kib, err)
	}
	if _, err := cpuTicks(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 42\n"+
			"switchboard_event_streams_open{node=\"a\"} 3\nswitchboard_event_streams_open{node=\"b\",x=\"}\"} 4\n"+
			"go_memstats_heap_inuse_bytes 1.5e+06\n")
	}))
	defer srv.Close()
	m, err := scrape(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if m["go_goroutines"] != 42 || m["switchboard_event_streams_open"] != 7 || m["go_memstats_heap_inuse_bytes"] != 1.5e6 {
		t.Fatalf("scrape = %v", m)
	}
	if m, err := scrape(""); m != nil || err != nil {
		t.Fatal("no URL scraped something")
	}
}
