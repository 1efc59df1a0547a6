package webhooks

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"switchboard/internal/domain"
)

// maxURLLength bounds a destination URL.
const maxURLLength = 2048

// AllowList is the operator's list of hosts that may be plain http and may
// resolve to private or loopback addresses (serve --webhook-allow-hosts), for
// tests and local development. Names compare case-insensitively.
type AllowList map[string]bool

// ParseAllowList reads a comma-separated host list.
func ParseAllowList(list string) AllowList {
	a := AllowList{}
	for _, h := range strings.Split(list, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h != "" {
			a[h] = true
		}
	}
	return a
}

// Allows reports whether host (from a URL, brackets removed) is listed.
func (a AllowList) Allows(host string) bool {
	return a[strings.ToLower(strings.TrimSuffix(host, "."))]
}

// checkURL validates a destination as it is saved and returns it as it is
// to be stored: https (or http to an allowed host), a host, no credentials
// or fragment, and no literal address that is not publicly routable. Names
// are checked again, resolved, at dial time (dialer.go), where DNS cannot be
// used to get around the rule.
//
// A host with characters beyond ASCII (full-width letters, digits or dots
// such as U+3002 "。", circled digits) is judged and stored in the ASCII form
// IDNA's lookup mapping gives it, the form net/http resolves and connects
// to: https://127。0。0。1/ is https://127.0.0.1/, refused like it, and
// https://ｅｘａｍｐｌｅ.com is saved as https://example.com.
func checkURL(raw string, allow AllowList) (string, error) {
	bad := func(why string) (string, error) {
		return "", domain.Errorf(domain.Invalid, "url %s", why)
	}
	if raw == "" {
		return bad("is required")
	}
	if len(raw) > maxURLLength {
		return bad("is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return bad("must be an absolute https URL")
	}
	host := u.Hostname()
	if host == "" {
		return bad("must name a host")
	}
	if !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil || ascii == "" || ascii == "." {
			return bad("host is not a valid internationalized domain name")
		}
		port := u.Port()
		host, u.Host = ascii, ascii
		if port != "" {
			u.Host = net.JoinHostPort(ascii, port)
		}
		if raw = u.String(); len(raw) > maxURLLength {
			return bad("is longer than 2048 characters once its host is in ASCII form")
		}
	}
	if u.User != nil {
		return bad("must not carry credentials; the signature authenticates deliveries")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad("must not have a fragment")
	}
	allowed := allow.Allows(host)
	switch u.Scheme {
	case "https":
	case "http":
		if !allowed {
			return bad("must use https (plain http only to hosts the operator allows)")
		}
	default:
		return bad("must use https")
	}
	if allowed {
		return raw, nil
	}
	// A final dot makes a name absolute; "127.0.0.1." is still 127.0.0.1.
	bare := strings.TrimSuffix(host, ".")
	if strings.EqualFold(bare, "localhost") || strings.HasSuffix(strings.ToLower(bare), ".localhost") {
		return bad("must not point at this machine (localhost)")
	}
	if ip, ok := literalIP(bare); ok {
		if why := blockedReason(ip); why != "" {
			return bad("points at a " + why + " address, which deliveries may not reach")
		}
	} else if looksNumeric(host) {
		// 127.1, 0x7f000001, 2130706433: forms some resolvers read as
		// addresses. Only the dotted-decimal form is accepted.
		return bad("host is an address in a non-standard form; write it as a.b.c.d")
	}
	return raw, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// literalIP parses host as an IP address (zone-free), unmapping nothing.
func literalIP(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		if err == nil {
			return ip.WithZone(""), true
		}
		return netip.Addr{}, false
	}
	return ip, true
}

// looksNumeric reports whether host is made of digits, hex digits, dots and
// x only with a digit first in its last label: an IPv4 address in one of the
// legacy forms inet_aton accepts, not a DNS name (a top-level domain is never
// numeric).
func looksNumeric(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	for _, l := range labels {
		for _, c := range strings.ToLower(l) {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == 'x') {
				return false
			}
		}
	}
	return last[0] >= '0' && last[0] <= '9'
}

// Special-purpose ranges beyond what netip classifies.
var blockedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (shared)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
}

// Prefixes of IPv6 forms that carry an IPv4 address in their last 32 bits.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	v4compat  = netip.MustParsePrefix("::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// blockedReason says why ip may not be a delivery destination, or "" if it
// may. IPv4 addresses embedded in IPv6 forms (mapped, NAT64, compatible,
// 6to4) are judged as the IPv4 address they reach.
func blockedReason(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		if why := blockedReason(ip.Unmap()); why != "" {
			return "IPv4-mapped " + why
		}
		return ""
	}
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, b := range blockedPrefixes {
		if b.p.Contains(ip) {
			return b.why
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(ip), v4compat.Contains(ip):
			v4 = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(ip):
			v4 = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if v4.IsValid() {
			if why := blockedReason(v4); why != "" {
				return "NAT64/embedded " + why
			}
		}
	}
	return ""
}

// hostOf is the host of a stored destination URL.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

var _ = net.IPv4len
