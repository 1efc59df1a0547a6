package e2e

import (
	"context"
	"fmt"
	"testing"

	"switchboard/internal/store/storetest"
)

// The sim carrier keeps its pending delivery receipts in memory. Messages it
// accepted before a kill -9 must still get their receipt once the server is
// back: serve rebuilds the queue from the messages sent without a delivery
// status. Before, they never got one (15,335 of them in the audit).
func TestSimReceiptsSurviveKill(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			db := storetest.DSN(t, e)
			c := crashProvision(t, db, nil)
			c.sim = "receipt-delay=1h,undeliverable=1206"
			p := c.launch(t, false)
			client := crashClient(t)
			const n = 12
			ids := map[int64]string{} // id → the delivery status due
			for i := range n {
				to, want := fmt.Sprintf("+1415555%04d", 1000+i), "delivered"
				if i%3 == 0 {
					to, want = fmt.Sprintf("+1206555%04d", 1000+i), "undelivered"
				}
				out := c.send(client, to, fmt.Sprintf("before the kill %d", i))
				if out.err != nil || out.status != 201 {
					t.Fatalf("send %d: %d %s %v", i, out.status, out.body, out.err)
				}
				ids[out.id] = want
			}
			crashKill(t, p)

			st := crashOpenStore(t, db)
			for id := range ids {
				if m, _ := crashMessage(t, st, c.account, id); m.DeliveryStatus != "" {
					t.Fatalf("message %d has delivery %q before the restart (receipt delay is 1h)", id, m.DeliveryStatus)
				}
			}
			c.sim = "receipt-delay=0,undeliverable=1206"
			c.launch(t, true)
			crashWaitFor(t, "every message sent before the kill gets its receipt", func() string {
				for id, want := range ids {
					m, ok := crashMessage(t, st, c.account, id)
					if !ok || m.DeliveryStatus != want {
						return fmt.Sprintf("message %d: delivery %q, want %q", id, m.DeliveryStatus, want)
					}
				}
				return ""
			})
			total, count, err := st.LedgerTotal(context.Background(), c.account)
			if err != nil || count != n || total != int64(n)*int64(crashSMSRate) {
				t.Errorf("ledger: %d in %d rows (%v), want %d charges of %d", total, count, err, n, crashSMSRate)
			}
		})
	}
}
