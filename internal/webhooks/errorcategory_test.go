package webhooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestErrorCategory maps the errors an HTTP exchange fails with, wrapped as
// net/http wraps them, to their category, and checks that no sentence
// carries anything of the error's own text.
func TestErrorCategory(t *testing.T) {
	post := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example.com/in?token=s3cr3t", Err: err}
	}
	dial := func(err error) error {
		return post(&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 443}, Err: err})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{post(&net.DNSError{Err: "no such host", Name: "x.example", Server: "127.0.0.53:53", IsNotFound: true}), "dns_failure: the host name did not resolve"},
		{post(&net.DNSError{Err: "i/o timeout", Name: "x.example", Server: "127.0.0.53:53", IsTimeout: true}), "dns_failure: the host name could not be resolved in time"},
		{post(&net.DNSError{Err: "server misbehaving", Name: "x.example", Server: "127.0.0.53:53"}), "dns_failure: the host name could not be resolved"},
		{dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection_refused: the endpoint refused the connection"},
		{dial(&refusedError{host: "10.0.0.5", why: "private"}), "destination_refused: the host resolves to a private address, which deliveries may not reach"},
		{dial(&refusedError{host: "fe80::1%eth0"}), "destination_refused: the host did not resolve to an address deliveries may reach"},
		{post(context.DeadlineExceeded), "timeout: the endpoint did not answer in time"},
		{dial(os.NewSyscallError("connect", syscall.ETIMEDOUT)), "timeout: the endpoint did not answer in time"},
		{post(io.EOF), "connection_reset: the connection closed before the endpoint answered"},
		{post(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), "connection_reset: the connection closed before the endpoint answered"},
		{dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "unreachable: the endpoint's network cannot be reached"},
		{dial(os.NewSyscallError("connect", syscall.ENETUNREACH)), "unreachable: the endpoint's network cannot be reached"},
		{post(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "tls_error: the endpoint's certificate is not signed by a trusted authority"},
		{post(&tls.CertificateVerificationError{Err: x509.HostnameError{Host: "10.0.0.5"}}), "tls_error: the endpoint's certificate is not valid for its host name"},
		{post(&tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}), "tls_error: the endpoint's certificate has expired or is not yet valid"},
		{post(&tls.CertificateVerificationError{Err: errors.New("other")}), "tls_error: the endpoint's certificate could not be verified"},
		{post(tls.AlertError(40)), "tls_error: the endpoint ended the TLS handshake"},
		{post(errors.New("http: server gave HTTP response to HTTPS client")), "tls_error: the endpoint did not answer with TLS"},
		{&url.Error{Op: "parse", URL: "https://x/%zz", Err: errors.New("invalid URL escape")}, "invalid_url: the URL could not be used"},
		{post(fmt.Errorf("net/http: something at 10.0.0.5")), "connection_failed: the request could not be completed"},
	} {
		got := ErrorCategory(tc.err)
		if got != tc.want {
			t.Errorf("ErrorCategory(%v) = %q, want %q", tc.err, got, tc.want)
		}
		for _, leak := range []string{"10.0.0.5", "127.0.0.53", "s3cr3t", "lookup", "dial"} {
			if strings.Contains(got, leak) {
				t.Errorf("ErrorCategory(%v) = %q shows %q", tc.err, got, leak)
			}
		}
	}
	if got := statusError(503); got != "http_status: the endpoint answered HTTP 503" {
		t.Errorf("statusError(503) = %q", got)
	}
}
