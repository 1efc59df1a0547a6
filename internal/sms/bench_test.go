package sms_test

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/carrier"
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

// BenchmarkReceipt measures applying a delivery report to a sent message,
// the third write of every send, through the single writer, many reports
// in parallel.
func BenchmarkReceipt(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, store.SQLite)
	a := storetest.Account(b, st, nil)
	storetest.Line(b, st, a.ID, &storetest.LineOpts{Number: "14155550100"})
	storetest.Rate(b, st, a.ID, "1", "0.0079", "0.02")
	sc := sim.New(sim.Config{ReceiptDelay: time.Hour})
	defer sc.Close()
	svc := sms.New(sms.Config{Store: st, Carrier: sc, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p := auth.Principal{AccountID: a.ID, Scopes: []auth.Scope{auth.SMSSend}}
	req := domain.SendRequest{From: "14155550100", To: []string{"+1 (212) 555-0100"}, Message: "Your appointment is tomorrow at 9:00."}
	ids := make(chan int64, b.N)
	for range b.N {
		res, _, err := svc.Send(ctx, p, req, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids <- res.Messages[0].ID
	}
	close(ids)
	b.SetParallelism(32)
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := svc.Receipt(ctx, carrier.Receipt{MessageID: <-ids, Status: "delivered"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	// The process's CPU per report: the figure a busy machine moves least.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
