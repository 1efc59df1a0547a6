package store_test

import (
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
		if n, err := st.PruneCarrierRefs(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Errorf("pruning refs older than an hour: %d, %v", n, err)
		}
		if n, err := st.PruneCarrierRefs(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
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
