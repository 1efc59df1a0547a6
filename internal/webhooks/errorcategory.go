package webhooks

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"switchboard/internal/store"
)

// Categories of a failed attempt. The error of an attempt that clients see
// (GET /webhooks/{id}/deliveries, POST /webhooks/{id}/test) is one of these,
// a colon and a fixed sentence, never the system's own words: those name the
// addresses a host resolved to from inside the network and the resolver
// that answered ("dial tcp 10.0.0.5:443: …", "lookup x on 127.0.0.53:53: …"),
// which the account's integrators must not learn. The detail goes to the
// server log (Dispatcher.attemptFailed).
const (
	CategoryDNS         = "dns_failure"
	CategoryRefused     = "connection_refused"
	CategoryReset       = "connection_reset"
	CategoryUnreachable = "unreachable"
	CategoryTimeout     = "timeout"
	CategoryTLS         = "tls_error"
	CategoryDestination = "destination_refused"
	CategoryHTTPStatus  = "http_status"
	CategoryInvalidURL  = "invalid_url"
	CategoryFailed      = "connection_failed"
)

// ErrorCategory maps the error of an attempt's HTTP exchange to what a
// client may see: "category: sentence".
func ErrorCategory(err error) string {
	var (
		refused     *refusedError
		dnsErr      *net.DNSError
		hostErr     x509.HostnameError
		unknownAuth x509.UnknownAuthorityError
		invalidCert x509.CertificateInvalidError
		verifyErr   *tls.CertificateVerificationError
		recordErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		netErr      net.Error
		urlErr      *url.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &refused):
		return category(CategoryDestination, refused.public())
	case errors.As(err, &dnsErr):
		switch {
		case dnsErr.IsNotFound:
			return category(CategoryDNS, "the host name did not resolve")
		case dnsErr.IsTimeout:
			return category(CategoryDNS, "the host name could not be resolved in time")
		}
		return category(CategoryDNS, "the host name could not be resolved")
	case errors.As(err, &hostErr):
		return category(CategoryTLS, "the endpoint's certificate is not valid for its host name")
	case errors.As(err, &unknownAuth):
		return category(CategoryTLS, "the endpoint's certificate is not signed by a trusted authority")
	case errors.As(err, &invalidCert):
		if invalidCert.Reason == x509.Expired {
			return category(CategoryTLS, "the endpoint's certificate has expired or is not yet valid")
		}
		return category(CategoryTLS, "the endpoint's certificate is not valid")
	case errors.As(err, &verifyErr):
		return category(CategoryTLS, "the endpoint's certificate could not be verified")
	case errors.As(err, &recordErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return category(CategoryTLS, "the endpoint did not answer with TLS")
	case errors.As(err, &alertErr):
		return category(CategoryTLS, "the endpoint ended the TLS handshake")
	case errors.Is(err, syscall.ECONNREFUSED):
		return category(CategoryRefused, "the endpoint refused the connection")
	case errors.As(err, &netErr) && netErr.Timeout():
		return category(CategoryTimeout, "the endpoint did not answer in time")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return category(CategoryReset, "the connection closed before the endpoint answered")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return category(CategoryUnreachable, "the endpoint's network cannot be reached")
	case errors.As(err, &urlErr) && urlErr.Op == "parse":
		return category(CategoryInvalidURL, "the URL could not be used")
	}
	return category(CategoryFailed, "the request could not be completed")
}

// statusError is the error of an attempt the endpoint answered with a
// status other than 2xx.
func statusError(code int) string {
	return category(CategoryHTTPStatus, "the endpoint answered HTTP "+strconv.Itoa(code))
}

func category(name, sentence string) string { return name + ": " + sentence }

// attemptFailed logs why an attempt of j failed, in full, and returns what
// the delivery records: its category.
func (d *Dispatcher) attemptFailed(j store.DeliveryJob, err error) string {
	c := ErrorCategory(err)
	detail := err
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		detail = urlErr.Err // without the URL, whose query may hold a token
	}
	d.log.Info("webhook attempt failed", "webhook", j.WebhookID, "delivery", j.ID, "category", c, "err", detail)
	return c
}
