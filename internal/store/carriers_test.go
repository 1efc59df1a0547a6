package store_test

import (
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestCarrierRefs: a connection's ids for a message are found by id and
// connection only, pruned by age, and a connection a line uses cannot be
// removed.
func TestCarrierRefs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := &store.CarrierConnection{Name: "a", Kind: "sim"}
		b := &store.CarrierConnection{Name: "b", Kind: "sim"}
		for _, c := range []*store.CarrierConnection{a, b} {
			if err := st.CreateCarrier(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AddCarrierRefs(ctx, a.ID, 42, []string{"p1", "p2"}); err != nil {
			t.Fatal(err)
		}
		if id, err := st.CarrierRefMessage(ctx, a.ID, "p2"); err != nil || id != 42 {
			t.Errorf("a's p2: %d, %v", id, err)
		}
		if _, err := st.CarrierRefMessage(ctx, b.ID, "p2"); !domain.IsNotFound(err) {
			t.Errorf("b's p2: %v, want not_found", err)
		}
		// A receipt per part: the words of all the message's parts.
		if msg, parts, err := st.CarrierPartReceipt(ctx, a.ID, "p2", "DELIVRD"); err != nil || msg != 42 || len(parts) != 2 || parts[0] != "" || parts[1] != "DELIVRD" {
			t.Errorf("p2's receipt: %d %q %v", msg, parts, err)
		}
		if _, parts, _ := st.CarrierPartReceipt(ctx, a.ID, "p1", "UNDELIV"); len(parts) != 2 || parts[0] != "UNDELIV" || parts[1] != "DELIVRD" {
			t.Errorf("p1's receipt after p2's: %q", parts)
		}
		if err := st.AddCarrierRefs(ctx, a.ID, 43, []string{"single"}); err != nil {
			t.Fatal(err)
		}
		if msg, parts, err := st.CarrierPartReceipt(ctx, a.ID, "single", "EXPIRED"); err != nil || msg != 43 || len(parts) != 1 || parts[0] != "EXPIRED" {
			t.Errorf("a one-part message's receipt: %d %q %v", msg, parts, err)
		}
		if _, _, err := st.CarrierPartReceipt(ctx, b.ID, "single", "DELIVRD"); !domain.IsNotFound(err) {
			t.Errorf("another connection's id: %v, want not_found", err)
		}
		if n, err := st.PruneCarrierRefs(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Errorf("pruning refs older than an hour: %d, %v", n, err)
		}
		if n, err := st.PruneCarrierRefs(ctx, time.Now().Add(time.Minute)); err != nil || n != 3 {
			t.Errorf("pruning every ref: %d, %v", n, err)
		}
		acct := storetest.Account(t, st, nil)
		line := storetest.Line(t, st, acct.ID, nil)
		if err := st.SetLineCarrier(ctx, acct.ID, line.Number, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteCarrier(ctx, "a"); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("removing a used connection: %v, want conflict", err)
		}
		if err := st.DeleteCarrier(ctx, "b"); err != nil {
			t.Errorf("removing an unused one: %v", err)
		}
	})
}

// A connection's queue keeps turns across callers, hands each message to
// one claimer once, and never twice after its sender stopped mid-send; its
// binds are never held more than their slots.
func TestCarrierQueueAndBinds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		var offset atomic.Int64
		st.SetClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
		c := &store.CarrierConnection{Name: "q", Kind: "smpp"}
		if err := st.CreateCarrier(ctx, c); err != nil {
			t.Fatal(err)
		}
		// Two numbers at one a second: each number's turns a second apart,
		// the other number's untouched.
		var dues []time.Time
		for i, n := range []string{"1555", "1555", "1666", "1555"} {
			due, err := st.EnqueueCarrier(ctx, c.ID, int64(100+i), []byte(`{"id":1}`), n, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			dues = append(dues, due)
		}
		gap := func(a, b int) time.Duration { return dues[b].Sub(dues[a]) }
		if gap(0, 1) < time.Second-time.Millisecond || gap(1, 3) < time.Second-time.Millisecond || gap(0, 2) > 500*time.Millisecond {
			t.Errorf("turns: %v", dues)
		}
		got, err := st.ClaimCarrierQueue(ctx, c.ID, "a", 10, time.Minute)
		if err != nil || len(got) != 2 || got[0].MessageID != 100 || got[1].MessageID != 102 {
			t.Fatalf("due now: %+v, %v; want messages 100 and 102", got, err)
		}
		if again, _ := st.ClaimCarrierQueue(ctx, c.ID, "b", 10, time.Minute); len(again) != 0 {
			t.Errorf("claimed twice: %+v", again)
		}
		// A message put back is claimed again; one done is gone.
		if ok, err := st.ReleaseCarrierQueued(ctx, got[0].ID, "b", time.Now()); ok || err != nil {
			t.Errorf("released by another owner: %t, %v", ok, err)
		}
		if ok, err := st.ReleaseCarrierQueued(ctx, got[0].ID, "a", time.Now()); !ok || err != nil {
			t.Errorf("released by its owner: %t, %v", ok, err)
		}
		if err := st.DoneCarrierQueued(ctx, got[1].ID); err != nil {
			t.Fatal(err)
		}
		if q, _ := st.InCarrierQueue(ctx, 102); q {
			t.Error("a message done is still queued")
		}
		if _, waiting, ok, err := st.CarrierQueueNext(ctx, c.ID); !ok || waiting != 3 || err != nil {
			t.Errorf("waiting: %d, %t, %v; want 3", waiting, ok, err)
		}
		offset.Store(int64(3 * time.Second))
		got, _ = st.ClaimCarrierQueue(ctx, c.ID, "a", 10, time.Minute)
		if len(got) != 3 || got[0].MessageID != 100 || got[1].MessageID != 101 || got[2].MessageID != 103 {
			t.Fatalf("in turn: %+v", got)
		}
		// Their sender stops: past the lease they are dropped, not resent.
		offset.Store(int64(2 * time.Minute))
		ids, err := st.DropStaleCarrierSends(ctx)
		if err != nil || len(ids) != 3 {
			t.Errorf("stale sends dropped: %v, %v", ids, err)
		}
		if again, _ := st.ClaimCarrierQueue(ctx, c.ID, "b", 10, time.Minute); len(again) != 0 {
			t.Errorf("a stale send claimed again: %+v", again)
		}

		// Two slots: a third taker gets none until a lease ends.
		for _, owner := range []string{"n1", "n2"} {
			if _, ok, err := st.TakeCarrierBind(ctx, c.ID, 2, owner, 10*time.Second); !ok || err != nil {
				t.Fatalf("%s: %t, %v", owner, ok, err)
			}
		}
		if _, ok, _ := st.TakeCarrierBind(ctx, c.ID, 2, "n3", 10*time.Second); ok {
			t.Fatal("a third bind of two taken")
		}
		if ok, err := st.RenewCarrierBind(ctx, c.ID, 0, "n1", 10*time.Second, 4); !ok || err != nil {
			t.Errorf("renewed: %t, %v", ok, err)
		}
		offset.Add(int64(11 * time.Second))
		if ok, _ := st.RenewCarrierBind(ctx, c.ID, 0, "n1", 10*time.Second, 0); !ok {
			t.Error("a lease nobody took since it ended is still its holder's to renew")
		}
		slot, ok, _ := st.TakeCarrierBind(ctx, c.ID, 2, "n3", 10*time.Second)
		if !ok || slot != 1 {
			t.Fatalf("n2's ended lease: slot %d, %t", slot, ok)
		}
		if ok, _ := st.RenewCarrierBind(ctx, c.ID, 1, "n2", 10*time.Second, 0); ok {
			t.Error("n2 renewed a bind n3 took")
		}
		binds, err := st.CarrierBinds(ctx)
		if err != nil || len(binds) != 2 || binds[0].Owner != "n1" || binds[1].Owner != "n3" {
			t.Errorf("binds: %+v, %v", binds, err)
		}
		if err := st.ReleaseCarrierBind(ctx, c.ID, 0, "n1"); err != nil {
			t.Fatal(err)
		}
		if slot, ok, _ := st.TakeCarrierBind(ctx, c.ID, 2, "n2", 10*time.Second); !ok || slot != 0 {
			t.Errorf("a given-up bind: slot %d, %t", slot, ok)
		}
	})
}
