// Command callgen fills a Switchboard database with generated calls for the
// call-search benchmark (bench/calls.sh): one account, calls spread evenly
// over a period, a realistic mix of directions, statuses and numbers. The
// same seed gives the same calls, so a window of them can be generated alone
// (-only-from, -only-to) into a second database that holds exactly that
// window's calls.
//
//	go run ./bench/callgen -db bench.db -calls 10000000 -end 2026-11-01T00:00:00Z -days 365
//
// How the calls are stored (-via): on SQLite through store.BulkInsertCalls
// (batched inserts; repeated and calledBack stay zero). On PostgreSQL with
// COPY and set-based SQL (pgload.go), which leaves exactly what ingesting each
// call with store.SaveCall would (-via ingest, far slower; the test compares
// the two), derived fields included.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

type options struct {
	dsn              string
	calls            int64
	end              time.Time
	days             int
	onlyFrom, onlyTo string
	batch            int
	callers          int
	via              string
}

func main() {
	var o options
	flag.StringVar(&o.dsn, "db", "callgen.db", "database: file path, sqlite://PATH or postgres://…")
	flag.Int64Var(&o.calls, "calls", 1_000_000, "calls to generate over the period")
	endS := flag.String("end", "2026-11-01T00:00:00Z", "end of the period (RFC 3339)")
	flag.IntVar(&o.days, "days", 365, "length of the period in days")
	flag.StringVar(&o.onlyFrom, "only-from", "", "store only calls starting at or after this time (RFC 3339)")
	flag.StringVar(&o.onlyTo, "only-to", "", "store only calls starting before this time (RFC 3339)")
	flag.IntVar(&o.batch, "batch", 5000, "calls per transaction (bulk)")
	flag.IntVar(&o.callers, "callers", 200_000, "distinct outside numbers")
	flag.StringVar(&o.via, "via", "", "bulk, copy (PostgreSQL) or ingest (store.SaveCall per call); default copy on PostgreSQL, bulk on SQLite")
	flag.Parse()
	var err error
	if o.end, err = time.Parse(time.RFC3339, *endS); err == nil {
		var res result
		res, err = run(context.Background(), o)
		if err == nil {
			fmt.Printf(`{"account":%d,"calls":%d,"seconds":%.1f}`+"\n", res.account, res.stored, res.seconds)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "callgen:", err)
		os.Exit(1)
	}
}

func parseOpt(s string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	return time.Parse(time.RFC3339, s)
}

type result struct {
	account, stored int64
	seconds         float64
}

// sink stores the generated calls of one account, in start order.
type sink interface {
	add(ctx context.Context, c domain.Call) error
	finish(ctx context.Context) error
}

func run(ctx context.Context, o options) (result, error) {
	start := o.end.Add(-time.Duration(o.days) * 24 * time.Hour)
	onlyFrom, err := parseOpt(o.onlyFrom, start)
	if err != nil {
		return result{}, err
	}
	onlyTo, err := parseOpt(o.onlyTo, o.end)
	if err != nil {
		return result{}, err
	}
	st, err := store.Open(ctx, o.dsn)
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return result{}, err
	}
	acct := domain.Account{Name: "Bench Calls"}
	if err := st.CreateAccount(ctx, &acct); err != nil {
		return result{}, err
	}
	began := time.Now()
	var out sink
	switch via := o.via; {
	case via == "ingest":
		out = &ingestSink{st: st}
	case via == "copy" || via == "" && st.Engine() == store.Postgres:
		if st.Engine() != store.Postgres {
			return result{}, fmt.Errorf("-via copy needs PostgreSQL")
		}
		pl, err := newPGLoader(ctx, o.dsn, acct.ID)
		if err != nil {
			return result{}, err
		}
		defer pl.close()
		out = pl
	case via == "bulk" || via == "":
		out = &bulkSink{st: st, batch: o.batch}
	default:
		return result{}, fmt.Errorf("-via %q: want bulk, copy or ingest", via)
	}
	stored, err := generate(ctx, o, start, onlyFrom, onlyTo, acct.ID, out, began)
	if err != nil {
		return result{}, err
	}
	if err := out.finish(ctx); err != nil {
		return result{}, err
	}
	return result{acct.ID, stored, time.Since(began).Seconds()}, nil
}

// generate makes o.calls calls over [start, o.end) and hands those starting
// in [onlyFrom, onlyTo) to out.
func generate(ctx context.Context, o options, start, onlyFrom, onlyTo time.Time, account int64, out sink, began time.Time) (int64, error) {
	rng := rand.New(rand.NewPCG(2026, 11))
	step := float64(o.end.Sub(start)) / float64(o.calls)
	dids := []string{"14155550100", "14155550101", "14155550102", "14155550103"}
	var stored int64
	for i := int64(0); i < o.calls; i++ {
		// Evenly spread with jitter; every random draw happens whether or not
		// the call is kept, so a window generated alone has the same calls.
		at := start.Add(time.Duration(float64(i)*step + rng.Float64()*step)).Truncate(time.Second)
		dirRoll, statRoll, caller, ext, did := rng.IntN(100), rng.IntN(100), rng.IntN(o.callers), 100+rng.IntN(60), dids[rng.IntN(len(dids))]
		wait, talk := int64(rng.IntN(60)), int64(rng.IntN(900))
		if at.Before(onlyFrom) || !at.Before(onlyTo) {
			continue
		}
		c := domain.Call{AccountID: account, ID: strconv.FormatInt(at.Unix(), 10) + "." + strconv.FormatInt(i, 10), StartTime: at,
			WaitTimeSeconds: wait, Numbers: []string{did}}
		outside := fmt.Sprintf("1%010d", 2000000000+caller)
		extension := strconv.Itoa(ext)
		if dirRoll < 60 {
			c.Direction, c.CallerType, c.CalledType = domain.CallInbound, "external", "queue"
			c.CallerNumber, c.CallerName, c.CalledNumber, c.DialledNumber = outside, "Caller "+strconv.Itoa(caller), did, did
		} else {
			c.Direction, c.CallerType, c.CalledType = domain.CallOutbound, "user", "external"
			c.CallerNumber, c.CallerName, c.CalledNumber, c.DialledNumber = extension, "Ext "+extension, outside, outside
		}
		switch {
		case statRoll < 65:
			c.Status, c.StatusCode, c.TalkTimeSeconds = domain.CallAnswered, 1, talk
		case statRoll < 90:
			c.Status, c.StatusCode, c.Abandoned = domain.CallMissed, -1, c.Direction == domain.CallInbound
		default:
			c.Status, c.StatusCode, c.TalkTimeSeconds = domain.CallVoicemail, 0, talk/4
		}
		c.DurationSeconds = wait + c.TalkTimeSeconds
		e := at.Add(time.Duration(c.DurationSeconds) * time.Second)
		c.EndTime = &e
		if err := out.add(ctx, c); err != nil {
			return stored, err
		}
		stored++
		if stored%500_000 == 0 {
			fmt.Fprintf(os.Stderr, "callgen: %d calls generated (%s)\n", stored, time.Since(began).Round(time.Second))
		}
	}
	return stored, nil
}

// bulkSink stores calls with store.BulkInsertCalls, batch calls per
// transaction.
type bulkSink struct {
	st    *store.Store
	batch int
	buf   []domain.Call
}

func (b *bulkSink) add(ctx context.Context, c domain.Call) error {
	b.buf = append(b.buf, c)
	if len(b.buf) >= b.batch {
		return b.flush(ctx)
	}
	return nil
}

func (b *bulkSink) flush(ctx context.Context) error {
	if len(b.buf) == 0 {
		return nil
	}
	err := b.st.BulkInsertCalls(ctx, b.buf[0].AccountID, b.buf)
	b.buf = b.buf[:0]
	return err
}

func (b *bulkSink) finish(ctx context.Context) error { return b.flush(ctx) }

// ingestSink stores each call as the ingest paths do.
type ingestSink struct{ st *store.Store }

func (s *ingestSink) add(ctx context.Context, c domain.Call) error {
	_, err := s.st.SaveCall(ctx, &domain.CallRecord{Call: c}, nil)
	return err
}

func (s *ingestSink) finish(context.Context) error { return nil }
