// Package logging builds Switchboard's structured logger. Log lines are
// buffered and written in batches: one write system call per request was a
// large share of a cheap request's cost. The buffer is flushed at least every
// FlushInterval, at once for warnings and errors, and on Close, so at most
// FlushInterval of info lines can be lost if the process is killed.
package logging

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// FlushInterval bounds how long an info line waits in the buffer.
const FlushInterval = 100 * time.Millisecond

// Writer is a buffered, periodically flushed, concurrency-safe writer.
type Writer struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewWriter wraps w and starts the flusher; call Close to stop it.
func NewWriter(w io.Writer) *Writer {
	lw := &Writer{buf: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.flusher()
	return lw
}

// Write buffers p (one whole log record, as slog handlers write them).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// Flush writes out everything buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Flush()
}

// Close stops the flusher and flushes.
func (w *Writer) Close() error {
	close(w.stop)
	<-w.done
	return w.Flush()
}

func (w *Writer) flusher() {
	defer close(w.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.Flush()
		}
	}
}

// New returns a logger writing text or JSON records at level and above to w,
// flushing at once for records at slog.LevelWarn and above.
func New(w *Writer, json bool, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(flushing{h, w})
}

// flushing flushes the writer after warnings and errors, which an operator
// must not lose to a crash.
type flushing struct {
	slog.Handler
	w *Writer
}

func (f flushing) Handle(ctx context.Context, r slog.Record) error {
	err := f.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		f.w.Flush()
	}
	return err
}

func (f flushing) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushing{f.Handler.WithAttrs(attrs), f.w}
}

func (f flushing) WithGroup(name string) slog.Handler {
	return flushing{f.Handler.WithGroup(name), f.w}
}
