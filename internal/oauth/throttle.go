package oauth

import (
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Sign-in throttling. Failed attempts are counted three ways: per username
// and client address together (the pair), per address, and per username.
// Past a few free attempts each further failure opens a waiting period,
// doubling up to a cap, during which attempts are refused without checking
// the password. Refusing (rather than sleeping), and counting an attempt
// before checking it, bounds the guessing rate even for parallel requests.
//
// The username-wide count, which is what stops guessing spread over many
// addresses, is applied only to addresses that have already failed for that
// username. So an attacker guessing at someone's name cannot lock that person
// out: the right password from an address with no failures for the name goes
// through, while each attacking address gets one attempt before the
// username's wait applies to it as well.
//
// Counters are forgotten after a quiet spell. They live in memory, per
// process: several nodes each enforce their own limit, which multiplies an
// attacker's rate by the node count but keeps sign-in free of database writes.
const (
	freeUserFailures = 3  // per username and per pair, before any wait
	freeIPFailures   = 10 // per address: offices share one
	firstWait        = time.Second
	maxWait          = 30 * time.Second
	forgetAfter      = 15 * time.Minute
	maxTracked       = 100_000
)

type strikes struct {
	failures int
	last     time.Time
	free     int
}

type throttle struct {
	mu      sync.Mutex
	entries map[string]*strikes
	now     func() time.Time
}

func newThrottle() *throttle {
	return &throttle{entries: map[string]*strikes{}, now: time.Now}
}

func userKey(username string) string { return "u:" + strings.ToLower(username) }

func pairKey(username, ip string) string {
	return "p:" + ipKey(ip) + " " + strings.ToLower(username)
}

// ipKey groups IPv6 addresses by /64, the block one subscriber usually holds.
func ipKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "ip:" + ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return "ip:" + p.String()
	}
	return "ip:" + a.String()
}

func (e *strikes) until() time.Time {
	over := e.failures - e.free
	if over <= 0 {
		return e.last
	}
	d := maxWait
	if over <= 6 {
		d = min(maxWait, firstWait<<(over-1))
	}
	return e.last.Add(d)
}

// begin returns how long the caller must wait before an attempt for
// username from ip, or 0. An attempt let through is counted as a failure at
// once, before its password is checked, so that parallel attempts see it
// (checking costs a bcrypt comparison, time enough for a burst to slip in);
// succeed takes it back.
func (t *throttle) begin(username, ip string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	pair, addr, user := pairKey(username, ip), ipKey(ip), userKey(username)
	keys := []string{pair, addr}
	if e := t.live(pair, now); e != nil && e.failures > 0 {
		keys = append(keys, user)
	}
	var longest time.Duration
	for _, k := range keys {
		if e := t.live(k, now); e != nil {
			longest = max(longest, e.until().Sub(now))
		}
	}
	if longest > 0 {
		return longest
	}
	t.strike(pair, freeUserFailures, now)
	t.strike(addr, freeIPFailures, now)
	t.strike(user, freeUserFailures, now)
	return 0
}

// live returns key's counter, forgetting it when it has been quiet long enough.
func (t *throttle) live(key string, now time.Time) *strikes {
	e := t.entries[key]
	if e != nil && now.Sub(e.last) > forgetAfter {
		delete(t.entries, key)
		return nil
	}
	return e
}

func (t *throttle) strike(key string, free int, now time.Time) {
	e := t.live(key, now)
	if e == nil {
		if len(t.entries) >= maxTracked {
			t.sweep(now)
		}
		if len(t.entries) >= maxTracked {
			// Full of live entries: keep tracking those (an attacker
			// cannot flush a victim's counter by flooding new names).
			return
		}
		e = &strikes{free: free}
		t.entries[key] = e
	}
	e.failures++
	e.last = now
}

func (t *throttle) sweep(now time.Time) {
	for k, e := range t.entries {
		if now.Sub(e.last) > forgetAfter {
			delete(t.entries, k)
		}
	}
}

// succeed forgets the pair's failures and takes back the attempt begin
// counted against the address and the username. Their other failures are
// kept: the person signing in must not reset the counters of an attacker
// guessing at their name from elsewhere, nor one valid account the counter
// of an attacker's address.
func (t *throttle) succeed(username, ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, pairKey(username, ip))
	for _, k := range []string{ipKey(ip), userKey(username)} {
		if e := t.entries[k]; e != nil && e.failures > 0 {
			e.failures--
		}
	}
}
