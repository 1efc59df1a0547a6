package storetest

import (
	"sync/atomic"
	"time"
)

// Clock is a test clock: it runs at the wall clock's pace from the time it
// starts at, and Advance moves it forward at once. A test hands the same
// clock to the store (store.SetClock) and to the services that compare
// times with the store's (sms.Config.Now), then advances it past the moment
// it waits for instead of sleeping until then; leases and retry waits still
// pass in real time.
type Clock struct {
	offset atomic.Int64 // from the wall clock, in nanoseconds
}

// NewClock returns a clock that reads start now.
func NewClock(start time.Time) *Clock {
	c := &Clock{}
	c.offset.Store(int64(time.Until(start)))
	return c
}

// Now reads the clock.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
