package store_test

import (
	"errors"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// recoverEnv is an account with a subscription, on a clock the test moves.
type recoverEnv struct {
	st   *store.Store
	now  time.Time
	acct domain.Account
	hook domain.Webhook
}

func newRecoverEnv(t *testing.T, st *store.Store) *recoverEnv {
	e := &recoverEnv{st: st, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	st.SetClock(func() time.Time { return e.now })
	e.acct = storetest.Account(t, st, nil)
	e.hook = e.newHook(t, e.acct.ID)
	return e
}

func (e *recoverEnv) newHook(t *testing.T, account int64) domain.Webhook {
	t.Helper()
	h := domain.Webhook{AccountID: account, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
	noErr(t, e.st.CreateWebhook(ctx, &h))
	return h
}

// event writes one event of account now and fans it out; the clock moves on
// a minute.
func (e *recoverEnv) event(t *testing.T, account int64) {
	t.Helper()
	noErr(t, e.st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
	storetest.FanOut(t, e.st)
	e.now = e.now.Add(time.Minute)
}

func (e *recoverEnv) setEnabled(t *testing.T, hook int64, on bool) {
	t.Helper()
	_, err := e.st.UpdateWebhook(ctx, e.acct.ID, hook, domain.WebhookPatch{Enabled: &on})
	noErr(t, err)
}

// finish claims every due delivery and records for each the outcome that
// outcome picks by its event id (nil: none; left as claimed).
func (e *recoverEnv) finish(t *testing.T, outcome func(eventID int64) *store.DeliveryOutcome) {
	t.Helper()
	ids, err := e.st.Claim(ctx, store.ClaimWebhookDeliveries, "o", 1000, time.Minute)
	noErr(t, err)
	jobs, err := e.st.DeliveryJobs(ctx, ids)
	noErr(t, err)
	var outs []store.DeliveryOutcome
	for _, j := range jobs {
		if o := outcome(j.EventID); o != nil {
			o.DeliveryID, o.WebhookID = j.ID, j.WebhookID
			if o.Attempt == nil {
				o.Attempt = &domain.WebhookAttempt{At: e.now, StatusCode: 500, Error: "HTTP 500"}
			}
			outs = append(outs, *o)
		}
	}
	_, err = e.st.FinishDeliveries(ctx, "o", outs)
	noErr(t, err)
}

// run does every batch of recover job id, batch deliveries at a time, and
// returns how many batches it took.
func (e *recoverEnv) run(t *testing.T, id int64, batch int) int {
	t.Helper()
	for n := 1; n < 1000; n++ {
		ids, err := e.st.Claim(ctx, store.ClaimWebhookRecoveries, "r", 10, time.Minute)
		noErr(t, err)
		if len(ids) != 1 || ids[0] != id {
			t.Fatalf("batch %d: claimed recover jobs %v, want [%d]", n, ids, id)
		}
		done, err := e.st.RecoverBatch(ctx, "r", id, batch)
		noErr(t, err)
		if done {
			return n
		}
	}
	t.Fatal("recover job never done")
	return 0
}

// byEvent groups the subscription's deliveries by event id.
func (e *recoverEnv) byEvent(t *testing.T, hook int64) map[int64][]domain.WebhookDelivery {
	t.Helper()
	list, err := e.st.WebhookDeliveries(ctx, e.acct.ID, hook, 0, 1000)
	noErr(t, err)
	out := map[int64][]domain.WebhookDelivery{}
	for _, d := range list {
		out[d.EventID] = append(out[d.EventID], d)
	}
	return out
}

// TestRecoverQueuesWhatDidNotSucceed checks what a recover job sends again:
// for each event of the window whose deliveries to the subscription failed
// or were skipped (also one that happened while the subscription was
// disabled: fanned out as skipped) and none succeeded or is pending, one new
// delivery of the same event, due now and marked with the job; a delivery
// pending for a later retry made due now instead; nothing for events that
// succeeded, are outside the window, or are another subscription's. Batches
// of 2 deliveries move the cursor across all of them.
func TestRecoverQueuesWhatDidNotSucceed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newRecoverEnv(t, st)
		other := e.newHook(t, e.acct.ID)
		e.setEnabled(t, other.ID, false)
		e.event(t, e.acct.ID) // 1: before the window, failed
		since := e.now
		for range 5 {
			e.event(t, e.acct.ID) // 2..6
		}
		e.setEnabled(t, e.hook.ID, false)
		e.event(t, e.acct.ID) // 7: while disabled: skipped at fan-out
		e.setEnabled(t, e.hook.ID, true)
		until := e.now
		e.event(t, e.acct.ID) // 8: after the window, failed
		evs, err := st.Events(ctx, e.acct.ID, 0, 100)
		noErr(t, err)
		if len(evs) != 8 {
			t.Fatalf("%d events, want 8", len(evs))
		}
		ev := func(n int) int64 { return evs[n-1].ID }
		if d := e.byEvent(t, e.hook.ID)[ev(7)]; len(d) != 1 || d[0].State != domain.DeliverySkipped || d[0].NextAttemptAt != nil {
			t.Fatalf("event 7's delivery while disabled: %+v, want one skipped, never due", d)
		}
		if d := e.byEvent(t, other.ID); len(d) != 8 || d[ev(2)][0].State != domain.DeliverySkipped {
			t.Fatalf("the disabled subscription's deliveries: %+v, want 8 skipped", d)
		}

		// 2 succeeds; 3 and 4 fail; 5 stays pending for an hour; 6 fails
		// and its redelivery fails too; 1 and 8 fail.
		failed := &store.DeliveryOutcome{State: domain.DeliveryFailed}
		e.finish(t, func(id int64) *store.DeliveryOutcome {
			switch id {
			case ev(2):
				return &store.DeliveryOutcome{State: domain.DeliverySucceeded, Attempt: &domain.WebhookAttempt{At: e.now, StatusCode: 200}}
			case ev(5):
				return &store.DeliveryOutcome{State: domain.DeliveryPending, NextAt: e.now.Add(time.Hour)}
			}
			o := *failed
			return &o
		})
		list := e.byEvent(t, e.hook.ID)
		_, err = st.Redeliver(ctx, e.acct.ID, e.hook.ID, list[ev(6)][0].ID)
		noErr(t, err)
		e.finish(t, func(int64) *store.DeliveryOutcome { o := *failed; return &o })
		// 4 was redelivered later, successfully.
		_, err = st.Redeliver(ctx, e.acct.ID, e.hook.ID, list[ev(4)][0].ID)
		noErr(t, err)
		e.finish(t, func(int64) *store.DeliveryOutcome {
			return &store.DeliveryOutcome{State: domain.DeliverySucceeded, Attempt: &domain.WebhookAttempt{At: e.now, StatusCode: 200}}
		})
		before := e.byEvent(t, e.hook.ID)

		e.now = e.now.Add(time.Minute)
		rc, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, until, 30*24*time.Hour)
		noErr(t, err)
		if rc.Status != domain.RecoveryRunning || !rc.Since.Equal(since) || !rc.Until.Equal(until) || rc.Queued != 0 || rc.WebhookID != e.hook.ID {
			t.Fatalf("new recover job %+v", rc)
		}
		if batches := e.run(t, rc.ID, 2); batches < 5 {
			t.Errorf("%d batches of 2 over 10 deliveries, want at least 5", batches)
		}
		after := e.byEvent(t, e.hook.ID)
		for n, want := range map[int]int{1: 0, 2: 0, 3: 1, 4: 0, 5: 0, 6: 1, 7: 1, 8: 0} {
			added := after[ev(n)][:len(after[ev(n)])-len(before[ev(n)])]
			if len(added) != want {
				t.Errorf("event %d: %d deliveries added, want %d (%+v)", n, len(added), want, after[ev(n)])
				continue
			}
			for _, d := range added {
				if d.State != domain.DeliveryPending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(e.now) || d.RecoveryID != rc.ID || d.EventID != ev(n) {
					t.Errorf("event %d: delivery queued %+v, want pending, due now, of job %d", n, d, rc.ID)
				}
			}
		}
		if d := after[ev(5)][0]; d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(e.now) || d.RecoveryID != rc.ID {
			t.Errorf("event 5's pending delivery %+v, want due now, marked with the job", d)
		}
		if d := e.byEvent(t, other.ID); len(d) != 8 {
			t.Errorf("the other subscription has %d deliveries, want its 8", len(d))
		}
		rc, err = st.WebhookRecovery(ctx, e.acct.ID, e.hook.ID, rc.ID)
		noErr(t, err)
		if rc.Status != domain.RecoveryDone || rc.Queued != 4 || rc.FinishedAt == nil || rc.Deliveries[domain.DeliveryPending] != 4 {
			t.Errorf("done job %+v, want done, 4 queued and pending", rc)
		}
		// Their outcomes show in its progress.
		e.finish(t, func(id int64) *store.DeliveryOutcome {
			if id == ev(7) {
				return &store.DeliveryOutcome{State: domain.DeliveryFailed}
			}
			return &store.DeliveryOutcome{State: domain.DeliverySucceeded, Attempt: &domain.WebhookAttempt{At: e.now, StatusCode: 200}}
		})
		rc, err = st.WebhookRecovery(ctx, e.acct.ID, e.hook.ID, rc.ID)
		noErr(t, err)
		if d := rc.Deliveries; d[domain.DeliverySucceeded] != 3 || d[domain.DeliveryFailed] != 1 || d[domain.DeliveryPending] != 0 {
			t.Errorf("progress %+v, want 3 succeeded, 1 failed", d)
		}
		// Another account, or another subscription, does not see the job.
		stranger := storetest.Account(t, st, nil)
		if _, err := st.WebhookRecovery(ctx, stranger.ID, e.hook.ID, rc.ID); !domain.IsNotFound(err) {
			t.Errorf("another account's read: %v, want not found", err)
		}
		if _, err := st.WebhookRecovery(ctx, e.acct.ID, other.ID, rc.ID); !domain.IsNotFound(err) {
			t.Errorf("read through another subscription: %v, want not found", err)
		}
		// A second recover, until now, finds nothing more to do but event
		// 7, which failed again, and event 8, now in its window.
		rc2, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, time.Time{}, 30*24*time.Hour)
		noErr(t, err)
		if !rc2.Until.Equal(e.now) {
			t.Errorf("until left out: %v, want now %v", rc2.Until, e.now)
		}
		e.run(t, rc2.ID, 500)
		if rc2, err = st.WebhookRecovery(ctx, e.acct.ID, e.hook.ID, rc2.ID); err != nil || rc2.Queued != 2 {
			t.Errorf("second recover %+v (%v), want events 7 and 8 queued", rc2, err)
		}
	})
}

// TestRecoverRefusals checks what starting a recover job refuses: another
// account's subscription (not found), a disabled one and a second job while
// one runs (conflict), a window before the retention or empty (invalid).
func TestRecoverRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newRecoverEnv(t, st)
		const retention = 30 * 24 * time.Hour
		stranger := storetest.Account(t, st, nil)
		since := e.now.Add(-time.Hour)
		if _, err := st.CreateWebhookRecovery(ctx, stranger.ID, e.hook.ID, since, time.Time{}, retention); !domain.IsNotFound(err) {
			t.Errorf("another account's subscription: %v, want not found", err)
		}
		for _, c := range []struct {
			since, until time.Time
		}{
			{e.now.Add(-retention - time.Second), time.Time{}}, // before the retention
			{e.now, time.Time{}},                             // empty: until is now
			{e.now.Add(time.Hour), e.now.Add(2 * time.Hour)}, // in the future: until becomes now
		} {
			if _, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, c.since, c.until, retention); domain.ErrorCode(err) != domain.Invalid {
				t.Errorf("window %v to %v: %v, want invalid", c.since, c.until, err)
			}
		}
		e.setEnabled(t, e.hook.ID, false)
		if _, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, time.Time{}, retention); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("disabled subscription: %v, want conflict", err)
		}
		e.setEnabled(t, e.hook.ID, true)
		rc, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, e.now.Add(-retention), time.Time{}, retention)
		noErr(t, err)
		if _, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, time.Time{}, retention); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("second job while one runs: %v, want conflict", err)
		}
		e.run(t, rc.ID, 10) // no deliveries at all: done at once
		if _, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, time.Time{}, retention); err != nil {
			t.Errorf("a job once the first is done: %v", err)
		}
	})
}

// TestRecoverStart checks where a job's scan starts: after the last
// delivery created more than the margin before the window, so that a recent
// window does not read the whole history, and never after a delivery of the
// window.
func TestRecoverStart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newRecoverEnv(t, st)
		t0 := e.now
		for range 100 {
			e.event(t, e.acct.ID) // a minute apart
		}
		list, err := st.WebhookDeliveries(ctx, e.acct.ID, e.hook.ID, 0, 1000)
		noErr(t, err)
		ids := make([]int64, len(list)) // oldest first
		for i, d := range list {
			ids[len(list)-1-i] = d.ID
		}
		for _, c := range []struct {
			since time.Duration
			want  int64
		}{
			{0, 0},
			{5 * time.Minute, 0}, // within the margin of the first
			{60 * time.Minute, ids[60-int(store.RecoverStartMargin/time.Minute)-1]},
			{99 * time.Minute, ids[99-int(store.RecoverStartMargin/time.Minute)-1]},
			{300 * time.Minute, ids[99]},
		} {
			got, err := st.RecoverStart(ctx, e.hook.ID, t0.Add(c.since).Add(-store.RecoverStartMargin))
			if err != nil || got != c.want {
				t.Errorf("since t0+%v: start after %d (%v), want %d", c.since, got, err, c.want)
			}
		}
		if got, err := st.RecoverStart(ctx, e.newHook(t, e.acct.ID).ID, t0); err != nil || got != 0 {
			t.Errorf("a subscription without deliveries: %d, %v", got, err)
		}
	})
}

// TestPruneRecoverJobs checks that a done recover job goes with the history
// once past the retention, and a running one stays.
func TestPruneRecoverJobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newRecoverEnv(t, st)
		rc, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, e.now.Add(-time.Hour), time.Time{}, 30*24*time.Hour)
		noErr(t, err)
		e.run(t, rc.ID, 10)
		other := e.newHook(t, e.acct.ID)
		running, err := st.CreateWebhookRecovery(ctx, e.acct.ID, other.ID, e.now.Add(-time.Hour), time.Time{}, 30*24*time.Hour)
		noErr(t, err)
		e.now = e.now.Add(31 * 24 * time.Hour)
		_, _, err = st.PruneWebhookHistory(ctx, 30*24*time.Hour, 100)
		noErr(t, err)
		if _, err := st.WebhookRecovery(ctx, e.acct.ID, e.hook.ID, rc.ID); !domain.IsNotFound(err) {
			t.Errorf("done job past the retention: %v, want pruned", err)
		}
		if _, err := st.WebhookRecovery(ctx, e.acct.ID, other.ID, running.ID); err != nil {
			t.Errorf("running job: %v, want kept", err)
		}
	})
}

// TestRecoverJobSurvivesACrash checks that a recover job is shared work: a
// node that claimed it and died (its lease ran out) loses it to another,
// which goes on from the job's cursor, and the dead node's late batch
// changes nothing.
func TestRecoverJobSurvivesACrash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newRecoverEnv(t, st)
		since := e.now
		for range 5 {
			e.event(t, e.acct.ID)
		}
		e.finish(t, func(int64) *store.DeliveryOutcome { return &store.DeliveryOutcome{State: domain.DeliveryFailed} })
		rc, err := st.CreateWebhookRecovery(ctx, e.acct.ID, e.hook.ID, since, time.Time{}, 30*24*time.Hour)
		noErr(t, err)
		ids, err := st.Claim(ctx, store.ClaimWebhookRecoveries, "dead", 10, time.Minute)
		noErr(t, err)
		if len(ids) != 1 {
			t.Fatalf("claimed %v", ids)
		}
		if done, err := st.RecoverBatch(ctx, "dead", rc.ID, 2); err != nil || done {
			t.Fatalf("first batch: done %v, %v", done, err)
		}
		// Claimed again by the dead node, which dies: its lease runs out.
		_, err = st.Claim(ctx, store.ClaimWebhookRecoveries, "dead", 10, time.Minute)
		noErr(t, err)
		e.now = e.now.Add(2 * time.Minute)
		if ids, err := st.Claim(ctx, store.ClaimWebhookRecoveries, "alive", 10, time.Minute); err != nil || len(ids) != 1 {
			t.Fatalf("the surviving node's claim: %v, %v", ids, err)
		}
		if _, err := st.RecoverBatch(ctx, "dead", rc.ID, 2); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("the dead node's late batch: %v, want ErrLeaseLost", err)
		}
		for done := false; !done; {
			done, err = st.RecoverBatch(ctx, "alive", rc.ID, 2)
			noErr(t, err)
			if !done {
				_, err = st.Claim(ctx, store.ClaimWebhookRecoveries, "alive", 10, time.Minute)
				noErr(t, err)
			}
		}
		rc, err = st.WebhookRecovery(ctx, e.acct.ID, e.hook.ID, rc.ID)
		noErr(t, err)
		if rc.Status != domain.RecoveryDone || rc.Queued != 5 || rc.Deliveries[domain.DeliveryPending] != 5 {
			t.Errorf("job %+v, want done with each of the 5 events queued once", rc)
		}
	})
}
