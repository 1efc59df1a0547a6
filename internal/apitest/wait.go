package apitest

import (
	"testing"
	"time"
)

// WaitTimeout bounds Eventually. It is generous: a condition that is coming
// holds within milliseconds, and CI machines are shared and loaded.
const WaitTimeout = 30 * time.Second

// pollEvery is how often Eventually checks its condition.
const pollEvery = 10 * time.Millisecond

// Eventually checks cond until it holds, failing t if it does not within
// WaitTimeout. It is how a test waits for something it cannot be told of
// (a row written, a metric moved, a goroutine parked): a poll of the
// condition with a deadline, never a sleep of a guessed length.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", WaitTimeout, what)
		}
		time.Sleep(pollEvery)
	}
}
