package twilio

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSignatureDocumented: the worked example of Twilio's webhook security
// guide (auth token 12345), in its current form and in the older one its
// libraries' docs and tests still carry.
func TestSignatureDocumented(t *testing.T) {
	t.Parallel()
	const docURL = "https://mycompany.com/myapp.php?foo=1&bar=2"
	params := func(caller string) url.Values {
		return url.Values{
			"CallSid": {"CA1234567890ABCDE"}, "Caller": {caller}, "Digits": {"1234"},
			"From": {caller}, "To": {"+18005551212"},
		}
	}
	tests := []struct {
		caller, want string
	}{
		{"+12349013030", "0/KCTR6DLpKmkAf8muzZqo1nDgQ="},
		{"+14158675309", "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
	}
	for _, tt := range tests {
		if got := Signature("12345", docURL, params(tt.caller)); got != tt.want {
			t.Errorf("Signature(Caller %s) = %s, want %s", tt.caller, got, tt.want)
		}
	}
}

// TestSignatureRepeated: a name given several values is signed once per
// distinct value, in sorted order, whatever order the form had.
func TestSignatureRepeated(t *testing.T) {
	t.Parallel()
	const u = "https://sb.example/hook"
	sorted := Signature(testAuthToken, u, url.Values{"A": {"1"}, "B": {"x", "y"}})
	tests := []struct {
		name   string
		params url.Values
		same   bool
	}{
		{"values in another order", url.Values{"A": {"1"}, "B": {"y", "x"}}, true},
		{"a value repeated", url.Values{"A": {"1"}, "B": {"y", "x", "y"}}, true},
		{"another value", url.Values{"A": {"1"}, "B": {"x", "z"}}, false},
		{"a value moved to another name", url.Values{"A": {"1", "x"}, "B": {"y"}}, false},
		{"a name with no values", url.Values{"A": {"1"}, "B": {"x", "y"}, "C": {}}, true},
		{"a name with an empty value", url.Values{"A": {"1"}, "B": {"x", "y"}, "C": {""}}, false},
	}
	for _, tt := range tests {
		if got := Signature(testAuthToken, u, tt.params) == sorted; got != tt.same {
			t.Errorf("%s: same signature %v, want %v", tt.name, got, tt.same)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	// Sorted as UTF-16 code units: the emoji's high surrogate (0xD83D)
	// comes before U+FF01, though its code point comes after; the byte
	// 0xFF, not UTF-8, counts as 0xDCFF.
	want := []string{"", "A", "AB", "B", "a", "é", "\U0001F600", "\U0001F601", "\xff", "\uFF01"}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, compareUTF16)
	if !slices.Equal(got, want) {
		t.Errorf("sorted %q, want %q", got, want)
	}
	if compareUTF16("\xfe", "\xff") >= 0 || compareUTF16("\xff", "\xfe") <= 0 {
		t.Error("distinct bytes that are not UTF-8 tie")
	}
}

func TestURLVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"https://sb.example/hook?a=1", []string{"https://sb.example/hook?a=1", "https://sb.example:443/hook?a=1"}},
		{"http://sb.example", []string{"http://sb.example", "http://sb.example:80"}},
		{"HTTPS://sb.example?x", []string{"HTTPS://sb.example?x", "HTTPS://sb.example:443?x"}},
		{"https://sb.example:8443/hook", []string{"https://sb.example/hook", "https://sb.example:8443/hook"}},
		{"https://sb.example:443/a:b?c=d:e", []string{"https://sb.example/a:b?c=d:e", "https://sb.example:443/a:b?c=d:e"}},
		{"https://user:pw@sb.example/h", []string{"https://user:pw@sb.example/h", "https://user:pw@sb.example:443/h"}},
		{"https://user:pw@sb.example:99/h", []string{"https://user:pw@sb.example/h", "https://user:pw@sb.example:99/h"}},
		{"http://[::1]/h", []string{"http://[::1]/h", "http://[::1]:80/h"}},
		{"http://[::1]:8080/h", []string{"http://[::1]/h", "http://[::1]:8080/h"}},
		{"sb.example/hook", []string{"sb.example/hook"}},
		{"/hook?u=https://x", []string{"/hook?u=https://x"}},
	}
	for _, tt := range tests {
		if got := urlVariants(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("urlVariants(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// statusForm is a status callback as Twilio posts it.
var statusForm = url.Values{
	"AccountSid": {testAccountSID}, "ApiVersion": {"2010-04-01"},
	"From": {"+15551234567"}, "To": {"+15557654321"},
	"MessageSid": {testSID}, "SmsSid": {testSID},
	"MessageStatus": {"delivered"}, "SmsStatus": {"delivered"},
	"RawDlrDoneDate": {"2508240501"},
}

// webhook builds a request as Twilio sends it, signed over signedURL.
func webhook(token, signedURL string, form url.Values) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://10.0.0.5:8080/carrier/twilio/status?line=7", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set(SignatureHeader, Signature(token, signedURL, form))
	return r
}

func TestVerifyRequest(t *testing.T) {
	t.Parallel()
	const public = "https://sb.example/carrier/twilio/status?line=7"
	c := newTestClient(t, Config{})
	tampered := func(r *http.Request) *http.Request {
		f := url.Values{}
		for k, v := range statusForm {
			f[k] = v
		}
		f.Set("MessageStatus", "failed")
		r.Body = httptestBody(f.Encode())
		return r
	}
	tests := []struct {
		name string
		req  *http.Request
		want error
	}{
		{name: "signed over the public URL", req: webhook(testAuthToken, public, statusForm)},
		{name: "signed with :443 written out", req: webhook(testAuthToken, "https://sb.example:443/carrier/twilio/status?line=7", statusForm)},
		{name: "signed over the internal URL", req: webhook(testAuthToken, "http://10.0.0.5:8080/carrier/twilio/status?line=7", statusForm), want: ErrSignature},
		{name: "signed without the query string", req: webhook(testAuthToken, "https://sb.example/carrier/twilio/status", statusForm), want: ErrSignature},
		{name: "signed with :8443", req: webhook(testAuthToken, "https://sb.example:8443/carrier/twilio/status?line=7", statusForm), want: ErrSignature},
		{name: "another token", req: webhook("0123456789abcdef0123456789abcdef", public, statusForm), want: ErrSignature},
		{name: "a parameter changed", req: tampered(webhook(testAuthToken, public, statusForm)), want: ErrSignature},
		{name: "no signature", req: func() *http.Request {
			r := webhook(testAuthToken, public, statusForm)
			r.Header.Del(SignatureHeader)
			return r
		}(), want: ErrSignature},
		{name: "signed with a SharedKey", req: func() *http.Request {
			r := webhook(testAuthToken, public, statusForm)
			r.Header.Set("X-Twilio-Webhooks-Signature-Settings", "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256")
			return r
		}(), want: ErrSignature},
		{name: "GET", req: func() *http.Request {
			r := webhook(testAuthToken, public, statusForm)
			r.Method = http.MethodGet
			return r
		}(), want: ErrSignature},
		{name: "not a form", req: func() *http.Request {
			r := webhook(testAuthToken, public, statusForm)
			r.Body = httptestBody("a=%zz")
			return r
		}(), want: ErrSignature},
		{name: "too large", req: webhook(testAuthToken, public, url.Values{"Body": {strings.Repeat("x", MaxWebhookBytes)}}), want: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form, err := c.VerifyRequest(tt.req, public)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("VerifyRequest: %v, want %v", err, tt.want)
			}
			if err != nil {
				if form != nil {
					t.Errorf("VerifyRequest returned %v with its error", form)
				}
				return
			}
			if !reflect.DeepEqual(form, statusForm) {
				t.Errorf("form %v, want %v", form, statusForm)
			}
		})
	}
}

// TestVerifyRequestPortInPublicURL: a public URL with a port also accepts
// a signature over it without the port, as Twilio's libraries do.
func TestVerifyRequestPortInPublicURL(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, Config{})
	for _, signed := range []string{"https://sb.example:8443/in", "https://sb.example/in"} {
		if _, err := c.VerifyRequest(webhook(testAuthToken, signed, statusForm), "https://sb.example:8443/in"); err != nil {
			t.Errorf("signed over %s: %v", signed, err)
		}
	}
}

func httptestBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
