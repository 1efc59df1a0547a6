package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// standardSignature computes a Standard Webhooks signature independently of
// the code under test: base64 of HMAC-SHA256, keyed by the base64-decoded
// part of the secret after "whsec_", over "id.timestamp.body".
func standardSignature(t *testing.T, secret, id, timestamp string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	must(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

type secretResp struct {
	Secret          string `json:"secret"`
	PreviousSecrets []struct {
		ExpiresAt string `json:"expiresAt"`
	} `json:"previousSecrets"`
}

// TestWebhookRotateTwiceKeepsEverySecret rotates a subscription's secret
// twice in a row and checks that a delivery made afterwards verifies, by an
// independent computation, with each of the three secrets (before, rotating
// a second time dropped the first secret at once); that GET …/secret and
// the rotations say when each previous secret stops; that a rotation beyond
// ten previous secrets is 409; and that another account's is 404.
func TestWebhookRotateTwiceKeepsEverySecret(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		srv := httptest.NewServer(httpapi.New(httpapi.Config{
			Store: f.st, Auth: &auth.Authenticator{Store: f.st},
			SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}),
			Webhooks: webhooks.New(webhooks.Config{Store: f.st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}),
			Log:      slog.New(slog.DiscardHandler),
		}))
		t.Cleanup(srv.Close)
		f.url = srv.URL
		rcv := newTestReceiver(t, http.StatusNoContent)
		w := f.createWebhook(t, f.keys["acme"], `{"url":"`+rcv.srv.URL+`/in","type":"AccountSMS","enabled":true}`)
		base := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		rotate := func() secretResp {
			t.Helper()
			status, h, b := f.do(t, "POST", base+"/secret/rotate", f.keys["acme"], "")
			if status != 200 || h.Get("Cache-Control") != "no-store" {
				t.Fatalf("rotate: %d %v %s", status, h, b)
			}
			return decodeInto[struct{ Data secretResp }](t, b).Data
		}
		checkExpiries := func(what string, r secretResp, n int) {
			t.Helper()
			if len(r.PreviousSecrets) != n {
				t.Fatalf("%s: previousSecrets %+v, want %d", what, r.PreviousSecrets, n)
			}
			var last time.Time
			for i, p := range r.PreviousSecrets {
				at, err := time.Parse(time.RFC3339, p.ExpiresAt)
				if err != nil || time.Until(at) < 23*time.Hour+58*time.Minute || time.Until(at) > 24*time.Hour+time.Minute {
					t.Errorf("%s: previous secret %d expires at %q, want about 24 hours from now", what, i, p.ExpiresAt)
				}
				if i > 0 && at.After(last) {
					t.Errorf("%s: previousSecrets %+v not newest first", what, r.PreviousSecrets)
				}
				last = at
			}
		}

		s0 := w.Secret
		r1 := rotate()
		checkExpiries("first rotation", r1, 1)
		r2 := rotate()
		checkExpiries("second rotation", r2, 2)
		secrets := []string{s0, r1.Secret, r2.Secret}
		if r1.Secret == s0 || r2.Secret == r1.Secret || !secretForm.MatchString(r2.Secret) {
			t.Fatalf("secrets %v", secrets)
		}
		got := decodeInto[struct{ Data secretResp }](t, mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10)+"/secret", f.keys["acme"])).Data
		if got.Secret != r2.Secret {
			t.Errorf("GET secret = %q, want the newest %q", got.Secret, r2.Secret)
		}
		checkExpiries("GET secret", got, 2)

		// A delivery after both rotations: POST …/test sends it now.
		status, _, b := f.do(t, "POST", base+"/test", f.keys["acme"], "")
		if status != 200 || decodeInto[struct{ Data testDelivery }](t, b).Data.State != "succeeded" {
			t.Fatalf("test: %d %s", status, b)
		}
		req, body := <-rcv.got, <-rcv.bodies
		id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
		sigs := strings.Fields(req.Header.Get("webhook-signature"))
		if len(sigs) != 3 {
			t.Errorf("webhook-signature %q: %d signatures, want one per secret (3)", req.Header.Get("webhook-signature"), len(sigs))
		}
		for i, secret := range secrets {
			if want := standardSignature(t, secret, id, ts, body); !slices.Contains(sigs, want) {
				t.Errorf("the delivery does not verify with secret %d of 3 (%s): signatures %v", i+1, []string{"the original", "the first rotation's", "the current"}[i], sigs)
			}
		}
		if want := standardSignature(t, r2.Secret, id, ts, body); len(sigs) == 0 || sigs[0] != want {
			t.Errorf("the current secret's signature is not first: %v", sigs)
		}

		// At most ten previous secrets sign at once.
		for i := 3; i <= 10; i++ {
			checkExpiries("rotation "+strconv.Itoa(i), rotate(), i)
		}
		status, _, b = f.do(t, "POST", base+"/secret/rotate", f.keys["acme"], "")
		if e := decodeInto[errorEnvelope](t, b).Error; status != 409 || e.Type != "conflict" || !strings.Contains(e.Message, "rotate again after") {
			t.Errorf("eleventh rotation: %d %s, want 409 conflict saying when", status, b)
		}
		// Another account's subscription is not found.
		if status, _, b := f.do(t, "POST", base+"/secret/rotate", f.keys["beta"], ""); status != 404 {
			t.Errorf("rotate another account's webhook: %d %s, want 404", status, b)
		}
	})
}
