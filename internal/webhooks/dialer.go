package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// newClient is the HTTP client deliveries go out with: a dialer that checks
// the address actually connected to (after DNS, so a name that resolves, or
// is re-pointed, to a private address is refused), no proxy from the
// environment, no redirects, and a whole-attempt timeout.
//
// Up to perHost idle connections are kept per host: every subscription may
// name the same host (one integrator, many subscriptions), and a smaller pool
// would dial a new connection for most attempts.
func newClient(allow AllowList, timeout time.Duration, perHost int) *http.Client {
	guarded := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: refusePrivate}
	open := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if allow.Allows(host) {
				return open.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   perHost,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		// A redirect is an answer, not a 2xx: following it could lead a
		// delivery anywhere, including inside the network.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// refusePrivate runs after DNS, just before connect, with the address being
// connected to.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &refusedError{host: host}
	}
	if why := blockedReason(ip); why != "" {
		return &refusedError{host: ip.String(), why: why}
	}
	return nil
}

// refusedError is the dialer's refusal of an address. Error names the
// address, for the server log; public says why without it, for the delivery
// (ErrorCategory).
type refusedError struct {
	host string
	why  string // the kind of address; "" when host is not an address
}

func (e *refusedError) Error() string {
	if e.why == "" {
		return fmt.Sprintf("webhooks: refusing to connect to %q: not an address", e.host)
	}
	return fmt.Sprintf("webhooks: refusing to connect to %s: a %s address", e.host, e.why)
}

func (e *refusedError) public() string {
	if e.why == "" {
		return "the host did not resolve to an address deliveries may reach"
	}
	return "the host resolves to a " + e.why + " address, which deliveries may not reach"
}
