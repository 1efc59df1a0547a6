package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestInfoIsBufferedWarnFlushesAndTickerFlushes(t *testing.T) {
	var out syncBuffer
	w := NewWriter(&out)
	defer w.Close()
	log := New(w, false, slog.LevelInfo)

	log.Warn("disk slow")
	if !strings.Contains(out.String(), "disk slow") {
		t.Fatalf("a warning must be written at once; got %q", out.String())
	}
	log.Info("request served")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "request served") {
		if time.Now().After(deadline) {
			t.Fatalf("info line not flushed within the interval; got %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseFlushes(t *testing.T) {
	var out syncBuffer
	w := NewWriter(&out)
	New(w, true, slog.LevelDebug).Debug("last words", "k", 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"msg":"last words"`) {
		t.Fatalf("Close must flush; got %q", out.String())
	}
}
