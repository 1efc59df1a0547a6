package sms_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/domain"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// BenchmarkSend measures the send path (validation, pricing, intent, sim
// carrier, outcome) on SQLite with synchronous=FULL, many sends in parallel.
func BenchmarkSend(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, store.SQLite)
	a := storetest.Account(b, st, nil)
	storetest.Line(b, st, a.ID, &storetest.LineOpts{Number: "14155550100"})
	storetest.Rate(b, st, a.ID, "1", "0.0079", "0.02")
	carrier := sim.New(sim.Config{ReceiptDelay: time.Second})
	defer carrier.Close()
	svc := sms.New(sms.Config{Store: st, Carrier: carrier, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	carrier.Attach(svc)
	p := auth.Principal{AccountID: a.ID, Scopes: []auth.Scope{auth.SMSSend}}
	req := domain.SendRequest{From: "14155550100", To: []string{"+1 (212) 555-0100"}, Message: "Your appointment is tomorrow at 9:00."}
	b.SetParallelism(32)
	before := st.CommitStats()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, outcome, err := svc.Send(ctx, p, req, nil); err != nil || outcome != domain.SendCreated {
				b.Fatalf("send: %q %v", outcome, err)
			}
		}
	})
	b.StopTimer()
	// The committer's side: group size and where a cycle's time goes.
	after := st.CommitStats()
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.Writes-before.Writes)/float64(n), "writes/commit")
		b.ReportMetric(float64((after.Exec-before.Exec).Microseconds())/float64(n), "exec-µs/commit")
		b.ReportMetric(float64((after.Commit-before.Commit).Microseconds())/float64(n), "commit-µs/commit")
	}
}
