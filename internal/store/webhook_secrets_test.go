package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// secretsOf is the secrets of list, in order.
func secretsOf(list []domain.PreviousSecret) []string {
	out := []string{}
	for _, p := range list {
		out = append(out, p.Secret)
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRotateWebhookSecretKeepsEachSecret rotates twice within the overlap,
// on the store's clock: both replaced secrets sign (GET …/secret's source
// and the delivery jobs) until each one's own expiry, then only those still
// within theirs; expired ones are deleted by the next rotation and by
// PruneWebhookSecrets; another account's subscription is not found; and a
// rotation beyond MaxPreviousSecrets is a conflict that changes nothing.
func TestRotateWebhookSecretKeepsEachSecret(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		now := t0
		st.SetClock(func() time.Time { return now })
		acct := storetest.Account(t, st, nil)
		other := storetest.Account(t, st, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_s0"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		const day = 24 * time.Hour

		r1, err := st.RotateWebhookSecret(ctx, acct.ID, hook.ID, "whsec_s1", day)
		noErr(t, err)
		if r1.Secret != "whsec_s1" || !sameStrings(secretsOf(r1.Previous), []string{"whsec_s0"}) || !r1.Previous[0].Until.Equal(t0.Add(day)) {
			t.Fatalf("first rotation: %+v", r1)
		}
		now = t0.Add(time.Hour)
		r2, err := st.RotateWebhookSecret(ctx, acct.ID, hook.ID, "whsec_s2", day)
		noErr(t, err)
		want := []domain.PreviousSecret{{Secret: "whsec_s1", Until: t0.Add(25 * time.Hour)}, {Secret: "whsec_s0", Until: t0.Add(day)}}
		check := func(what string, got domain.Webhook, wantSecret string, want []domain.PreviousSecret) {
			t.Helper()
			if got.Secret != wantSecret || len(got.Previous) != len(want) {
				t.Fatalf("%s: secret %q previous %+v, want %q and %+v", what, got.Secret, got.Previous, wantSecret, want)
			}
			for i := range want {
				if got.Previous[i].Secret != want[i].Secret || !got.Previous[i].Until.Equal(want[i].Until) {
					t.Errorf("%s: previous %+v, want %+v", what, got.Previous, want)
				}
			}
		}
		check("second rotation", r2, "whsec_s2", want)
		read, err := st.WebhookSecrets(ctx, acct.ID, hook.ID)
		noErr(t, err)
		check("read after two rotations", read, "whsec_s2", want)

		// What a delivery is signed with.
		payload, _ := json.Marshal(map[string]any{"n": 1})
		deliveryID, err := st.AddTestDelivery(ctx, acct.ID, hook.ID, payload, "test-owner", time.Minute)
		noErr(t, err)
		jobs := func() []domain.PreviousSecret {
			t.Helper()
			js, err := st.DeliveryJobs(ctx, []int64{deliveryID})
			noErr(t, err)
			if len(js) != 1 {
				t.Fatalf("%d jobs, want 1", len(js))
			}
			return js[0].Webhook.Previous
		}
		check("delivery job", domain.Webhook{Secret: "whsec_s2", Previous: jobs()}, "whsec_s2", want)

		// Another account's subscription.
		if _, err := st.RotateWebhookSecret(ctx, other.ID, hook.ID, "whsec_x", day); !domain.IsNotFound(err) {
			t.Errorf("rotating another account's webhook: %v, want not_found", err)
		}
		if _, err := st.WebhookSecrets(ctx, other.ID, hook.ID); !domain.IsNotFound(err) {
			t.Errorf("reading another account's secrets: %v, want not_found", err)
		}

		// s0 expires 24 h after its rotation, s1 an hour later.
		now = t0.Add(day)
		read, err = st.WebhookSecrets(ctx, acct.ID, hook.ID)
		noErr(t, err)
		check("read at s0's expiry", read, "whsec_s2", want[:1])
		check("delivery job at s0's expiry", domain.Webhook{Secret: "whsec_s2", Previous: jobs()}, "whsec_s2", want[:1])
		n, err := st.PruneWebhookSecrets(ctx, 100)
		noErr(t, err)
		if n != 1 || st.CountRows(ctx, "webhook_previous_secrets") != 1 {
			t.Errorf("pruning at s0's expiry deleted %d, left %d rows; want 1 and 1", n, st.CountRows(ctx, "webhook_previous_secrets"))
		}
		now = t0.Add(25 * time.Hour)
		if p := jobs(); len(p) != 0 {
			t.Errorf("delivery job past every expiry: previous %+v, want none", p)
		}

		// At most MaxPreviousSecrets sign beside the current one; the
		// rotation that finds them all taken changes nothing. The next
		// rotation deleted s1, expired.
		for i := range store.MaxPreviousSecrets {
			_, err := st.RotateWebhookSecret(ctx, acct.ID, hook.ID, "whsec_r"+string(rune('a'+i)), day)
			noErr(t, err)
		}
		if n := st.CountRows(ctx, "webhook_previous_secrets"); n != store.MaxPreviousSecrets {
			t.Errorf("%d previous secrets stored, want %d (expired ones deleted)", n, store.MaxPreviousSecrets)
		}
		_, err = st.RotateWebhookSecret(ctx, acct.ID, hook.ID, "whsec_refused", day)
		if domain.ErrorCode(err) != domain.Conflict {
			t.Fatalf("rotation beyond %d previous secrets: %v, want conflict", store.MaxPreviousSecrets, err)
		}
		read, err = st.WebhookSecrets(ctx, acct.ID, hook.ID)
		noErr(t, err)
		if read.Secret != "whsec_rj" || len(read.Previous) != store.MaxPreviousSecrets {
			t.Errorf("after the refused rotation: %q with %d previous, want whsec_rj with %d", read.Secret, len(read.Previous), store.MaxPreviousSecrets)
		}
		// Once the oldest expires, rotating works again.
		now = now.Add(day)
		_, err = st.RotateWebhookSecret(ctx, acct.ID, hook.ID, "whsec_later", day)
		noErr(t, err)

		// Deleting the subscription deletes its previous secrets.
		noErr(t, st.DeleteWebhook(ctx, acct.ID, hook.ID))
		if n := st.CountRows(ctx, "webhook_previous_secrets"); n != 0 {
			t.Errorf("%d previous secrets left after the webhook was deleted", n)
		}
	})
}

// TestWebhookSecretsMigration writes a rotated subscription and attempt
// errors in the schema before migration 0027, migrates, and checks that the
// previous secret still signs until its time and that the errors recorded
// with addresses and the resolver in them now read as their category.
func TestWebhookSecretsMigration(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			st, err := store.Open(ctx, storetest.DSN(t, engine))
			noErr(t, err)
			defer st.Close()
			noErr(t, st.MigrateBefore(ctx, "0027"))
			until := time.Now().Add(time.Hour).UnixMicro()
			errs := map[string]string{
				"HTTP 503":  "http_status: the endpoint answered HTTP 503",
				"timed out": "timeout: the endpoint did not answer in time",
				`dial tcp 10.0.0.5:443: connect: connection refused`:                                  "connection_refused: the endpoint refused the connection",
				`dial tcp: lookup hooks.example.com on 127.0.0.53:53: no such host`:                   "dns_failure: the host name did not resolve",
				`dial tcp 10.0.0.5:443: webhooks: refusing to connect to 10.0.0.5: a private address`: "destination_refused: the host resolves to an address deliveries may not reach",
				`tls: failed to verify certificate: x509: certificate signed by unknown authority`:    "tls_error: the TLS handshake with the endpoint failed",
				`read tcp 192.168.1.2:51234->10.0.0.5:443: read: connection reset by peer`:            "connection_reset: the connection closed before an answer",
				`something else at 10.0.0.5`: "connection_failed: the request could not be completed",
				``:                           ``,
			}
			stmts := []string{
				`INSERT INTO accounts (name, created_at) VALUES ('A', 0)`,
				`INSERT INTO webhooks (account_id, url, type, enabled, secret, previous_secret, previous_until, created_at, updated_at)
					VALUES (1, 'https://h.example.com', 'AccountSMS', TRUE, 'whsec_NEW', 'whsec_OLD', ` + itoa(until) + `, 0, 0)`,
				`INSERT INTO events (account_id, type, payload, created_at) VALUES (1, 'AccountSMS', '{}', 1)`,
			}
			d := 0
			for raw := range errs {
				d++
				stmts = append(stmts,
					`INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, attempts, created_at, updated_at) VALUES (1, 1, 1, 'failed', 1, `+itoa(int64(d))+`, 20)`,
					`INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status_code, latency_us, error) VALUES (`+itoa(int64(d))+`, 1, 11, 0, 7, '`+raw+`')`)
			}
			for _, q := range stmts {
				if err := st.ExecRaw(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			noErr(t, st.Migrate(ctx))

			w, err := st.WebhookSecrets(ctx, 1, 1)
			noErr(t, err)
			if w.Secret != "whsec_NEW" || len(w.Previous) != 1 || w.Previous[0].Secret != "whsec_OLD" || w.Previous[0].Until.UnixMicro() != until {
				t.Errorf("after the migration: %q, previous %+v; want whsec_NEW and whsec_OLD until %d", w.Secret, w.Previous, until)
			}
			list, err := st.WebhookDeliveries(ctx, 1, 1, 0, 100)
			noErr(t, err)
			got := map[string]bool{}
			for _, dl := range list {
				if dl.Last != nil {
					got[dl.Last.Error] = true
				}
			}
			for raw, want := range errs {
				if !got[want] {
					t.Errorf("error %q: no attempt reads %q after the migration (got %v)", raw, want, got)
				}
			}
		})
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
