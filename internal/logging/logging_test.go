package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/apitest"
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
	apitest.Eventually(t, "the ticker to flush the info line", func() bool { return strings.Contains(out.String(), "request served") })
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
