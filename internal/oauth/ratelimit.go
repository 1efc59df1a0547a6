package oauth

import (
	"sync"
	"time"
)

// Rate is a token bucket: Burst events at once, then one more every Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// Registration limits by default. A person or an app registers a handful of
// clients; a script registering in a loop gets ten, then one a minute. The
// global cap bounds what many addresses together can add: at most 200 at
// once and then 600 an hour, so with unused clients pruned after
// store.OAuthUnusedClientTTL the table holds at most about 14,600 unused
// clients per node.
var (
	DefaultRegisterPerAddress = Rate{Burst: 10, Every: time.Minute}
	DefaultRegisterGlobal     = Rate{Burst: 200, Every: 6 * time.Second}
)

type bucket struct {
	tokens float64
	last   time.Time
}

// refill brings b up to date at now and reports whether it is full (and so
// no different from a bucket never seen).
func (b *bucket) refill(r Rate, now time.Time) bool {
	if b.last.IsZero() {
		b.tokens, b.last = float64(r.Burst), now
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(float64(r.Burst), b.tokens+float64(elapsed)/float64(r.Every))
		b.last = now
	}
	return b.tokens >= float64(r.Burst)
}

// wait is how long until b holds one token.
func (b *bucket) wait(r Rate) time.Duration {
	return time.Duration((1 - b.tokens) * float64(r.Every))
}

// limiter applies a per-address and a global rate to one kind of request.
// Like the sign-in throttle it lives in memory, per process: several nodes
// each allow the configured rates.
type limiter struct {
	mu       sync.Mutex
	now      func() time.Time
	perAddr  Rate
	global   Rate
	all      bucket
	addrs    map[string]*bucket
	maxAddrs int
}

func newLimiter(perAddr, global Rate) *limiter {
	return &limiter{now: time.Now, perAddr: perAddr, global: global, addrs: map[string]*bucket{}, maxAddrs: maxTracked}
}

// allow takes one token from addr's bucket and the global one and returns 0,
// or takes none and returns how long to wait before one request would be
// allowed.
func (l *limiter) allow(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.addrs[addr]
	if b == nil {
		if len(l.addrs) >= l.maxAddrs {
			l.sweep(now)
		}
		b = &bucket{} // full at its first refill
		if len(l.addrs) < l.maxAddrs {
			l.addrs[addr] = b
		}
		// Otherwise every tracked address is still paying off its burst: this
		// one goes untracked, and the global bucket still bounds the total.
	}
	b.refill(l.perAddr, now)
	l.all.refill(l.global, now)
	if b.tokens < 1 {
		return b.wait(l.perAddr)
	}
	if l.all.tokens < 1 {
		return l.all.wait(l.global)
	}
	b.tokens--
	l.all.tokens--
	return 0
}

// refund gives back the token allow took for addr, for a request that
// turned out to write nothing.
func (l *limiter) refund(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.addrs[addr]; b != nil {
		b.tokens = min(float64(l.perAddr.Burst), b.tokens+1)
	}
	l.all.tokens = min(float64(l.global.Burst), l.all.tokens+1)
}

// sweep forgets the addresses whose buckets have filled up again.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.addrs {
		if b.refill(l.perAddr, now) {
			delete(l.addrs, k)
		}
	}
}
