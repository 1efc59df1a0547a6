package sms

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchboard/internal/background"
)

// TestSettlerLifecycle checks the settler as a background.Service: Stop
// before Start and twice is harmless; a stopped settler gives a record up at
// once (failed, never written); Start lets it retry records again.
func TestSettlerLifecycle(t *testing.T) {
	var svc Service
	st := svc.Settler()
	if st != svc.Settler() {
		t.Fatal("Settler returned two settlers")
	}
	st.Stop() // never started, nothing running
	st.Stop()

	gaveUp := make(chan error, 1)
	svc.settle.start("k", 1, func(context.Context) error { return nil }, func(err error) { gaveUp <- err })
	select {
	case err := <-gaveUp:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped settler gave up with %v, want context.Canceled", err)
		}
	case <-time.After(background.SignalTimeout):
		t.Fatal("a stopped settler neither wrote nor gave up the record")
	}

	if err := st.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	svc.settle.base = time.Millisecond
	written := make(chan struct{})
	tries := 0
	svc.settle.start("k", 1, func(context.Context) error {
		if tries++; tries < 3 {
			return errors.New("database refused")
		}
		close(written)
		return nil
	}, func(err error) { t.Errorf("given up after Start: %v", err) })
	select {
	case <-written:
	case <-time.After(background.SignalTimeout):
		t.Fatal("a started settler did not retry the record")
	}
}
