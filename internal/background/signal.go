package background

import "time"

// SignalTimeout is how long WaitOrTimeout waits. It is generous: a signal
// that is coming arrives in milliseconds, and CI machines are shared.
const SignalTimeout = 30 * time.Second

// Signal is a test hook a service fires at a point tests care about (a pass
// finished, a row was claimed). Its zero value is off: Signal does nothing
// until Init, which a test calls before the service starts.
type Signal[T any] struct {
	ch chan T
}

// Init switches the signal on. It must be called before the service that
// fires it starts.
func (s *Signal[T]) Init() { s.ch = make(chan T, 1000) }

// Signal records v for a waiting test; it never blocks the service (a signal
// nobody waits for is dropped once the buffer is full).
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// TB is the part of testing.TB that WaitOrTimeout uses, so that this package
// does not import testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitOrTimeout returns the next signal's value, failing t if none arrives
// within SignalTimeout.
func (s *Signal[T]) WaitOrTimeout(t TB) T {
	t.Helper()
	if s.ch == nil {
		t.Fatalf("background: waiting on a signal that was never initialised")
		var zero T
		return zero
	}
	select {
	case v := <-s.ch:
		return v
	case <-time.After(SignalTimeout):
		t.Fatalf("background: no signal within %v", SignalTimeout)
	}
	var zero T
	return zero
}
