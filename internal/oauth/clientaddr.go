package oauth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the address that per-address limits (sign-in, registration)
// count against: the peer's address, unless the peer is one of the
// operator's trusted proxies (Config.TrustedProxies), in which case it is the
// rightmost X-Forwarded-For entry that is not itself a trusted proxy.
// Entries to the left of that one were written by whoever sent the request
// and prove nothing. Without trusted proxies forwarded headers are ignored
// (anyone can send them): behind a proxy every request then counts against
// the proxy's address, which is stricter, never looser.
func (s *Server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(s.trustedProxies) == 0 || !s.trusted(host) {
		return host
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(hop); err != nil {
			// Garbage where an address should be: whatever is left of it
			// cannot be trusted either.
			return host
		}
		if !s.trusted(hop) {
			return hop
		}
		host = hop
	}
	return host
}

func (s *Server) trusted(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes, e.g. "127.0.0.1, 10.0.0.0/8".
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, err
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, err
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
