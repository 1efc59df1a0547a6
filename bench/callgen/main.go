// Command callgen fills a Switchboard database with generated calls for the
// call-search benchmark (bench/calls.sh): one account, calls spread evenly
// over a period, a realistic mix of directions, statuses and numbers. The
// same seed gives the same calls, so a window of them can be generated alone
// (-only-from, -only-to) into a second database that holds exactly that
// window's calls.
//
//	go run ./bench/callgen -db bench.db -calls 10000000 -end 2026-11-01T00:00:00Z -days 365
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	db := flag.String("db", "callgen.db", "database: file path, sqlite://PATH or postgres://…")
	n := flag.Int64("calls", 1_000_000, "calls to generate over the period")
	endS := flag.String("end", "2026-11-01T00:00:00Z", "end of the period (RFC 3339)")
	days := flag.Int("days", 365, "length of the period in days")
	onlyFrom := flag.String("only-from", "", "store only calls starting at or after this time (RFC 3339)")
	onlyTo := flag.String("only-to", "", "store only calls starting before this time (RFC 3339)")
	batch := flag.Int("batch", 5000, "calls per transaction")
	flag.Parse()
	if err := run(*db, *n, *endS, *days, *onlyFrom, *onlyTo, *batch); err != nil {
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

func run(dsn string, n int64, endS string, days int, onlyFromS, onlyToS string, batch int) error {
	ctx := context.Background()
	end, err := time.Parse(time.RFC3339, endS)
	if err != nil {
		return err
	}
	start := end.Add(-time.Duration(days) * 24 * time.Hour)
	onlyFrom, err := parseOpt(onlyFromS, start)
	if err != nil {
		return err
	}
	onlyTo, err := parseOpt(onlyToS, end)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	acct := domain.Account{Name: "Bench Calls"}
	if err := st.CreateAccount(ctx, &acct); err != nil {
		return err
	}
	began := time.Now()
	rng := rand.New(rand.NewPCG(2026, 11))
	step := float64(end.Sub(start)) / float64(n)
	dids := []string{"14155550100", "14155550101", "14155550102", "14155550103"}
	var buf []domain.Call
	var stored int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := st.BulkInsertCalls(ctx, acct.ID, buf); err != nil {
			return err
		}
		stored += int64(len(buf))
		buf = buf[:0]
		return nil
	}
	for i := int64(0); i < n; i++ {
		// Evenly spread with jitter; every random draw happens whether or not
		// the call is kept, so a window generated alone has the same calls.
		at := start.Add(time.Duration(float64(i)*step + rng.Float64()*step)).Truncate(time.Second)
		dirRoll, statRoll, caller, ext, did := rng.IntN(100), rng.IntN(100), rng.IntN(200_000), 100+rng.IntN(60), dids[rng.IntN(len(dids))]
		wait, talk := int64(rng.IntN(60)), int64(rng.IntN(900))
		if at.Before(onlyFrom) || !at.Before(onlyTo) {
			continue
		}
		c := domain.Call{ID: strconv.FormatInt(at.Unix(), 10) + "." + strconv.FormatInt(i, 10), StartTime: at,
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
		buf = append(buf, c)
		if len(buf) >= batch {
			if err := flush(); err != nil {
				return err
			}
			if stored%int64(batch*100) == 0 {
				fmt.Fprintf(os.Stderr, "callgen: %d calls stored (%s)\n", stored, time.Since(began).Round(time.Second))
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if st.Engine() == store.Postgres {
		// A bulk load outruns autovacuum: without statistics the planner
		// may walk a filtered search the slow way. A database that grew by
		// traffic has them.
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `ANALYZE calls, call_counts, call_tags, call_legs`); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
	}
	fmt.Printf(`{"account":%d,"calls":%d,"seconds":%.1f}`+"\n", acct.ID, stored, time.Since(began).Seconds())
	return nil
}
