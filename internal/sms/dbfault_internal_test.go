package sms

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// dbFault makes the test's database refuse writes on demand, from a
// connection of its own, the way an outage or a broken pooler does from the
// service's point of view: a trigger refuses every charge (so recording an
// acceptance, or a receipt that would charge, fails), and on PostgreSQL the
// service's connections can be terminated as by a server restart.
type dbFault struct {
	t      *testing.T
	engine store.Engine
	admin  *sql.DB
	app    string // PostgreSQL application_name of the service's connections
}

// newFaultEnv is newEnv on a store whose database the returned dbFault can
// make refuse writes.
func newFaultEnv(t *testing.T, engine store.Engine) (*env, *dbFault) {
	t.Helper()
	dsn := storetest.DSN(t, engine)
	f := &dbFault{t: t, engine: engine}
	driver, adminDSN := "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://")+"?_pragma=busy_timeout(20000)"
	if engine == store.Postgres {
		var b [6]byte
		rand.Read(b[:])
		f.app = "sbfault_" + hex.EncodeToString(b[:])
		u, err := url.Parse(dsn)
		check(t, err)
		q := u.Query()
		q.Set("application_name", f.app)
		u.RawQuery = q.Encode()
		dsn = u.String()
		driver, adminDSN = "pgx", storetest.DSN(t, engine)
		// The admin connection must see the test's schema, not a new one.
		au, _ := url.Parse(adminDSN)
		aq := au.Query()
		aq.Set("search_path", q.Get("search_path"))
		au.RawQuery = aq.Encode()
		adminDSN = au.String()
	}
	st, err := store.Open(bg, dsn)
	check(t, err)
	t.Cleanup(func() { st.Close() })
	check(t, st.Migrate(bg))
	f.admin, err = sql.Open(driver, adminDSN)
	check(t, err)
	t.Cleanup(func() { f.admin.Close() })
	return newEnvOn(t, st), f
}

// refuse makes every charge fail (on) or work again (off).
func (f *dbFault) refuse(on bool) {
	f.t.Helper()
	var stmts []string
	switch {
	case f.engine == store.SQLite && on:
		stmts = []string{`CREATE TRIGGER refuse_charge BEFORE INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`}
	case f.engine == store.SQLite:
		stmts = []string{`DROP TRIGGER refuse_charge`}
	case on:
		stmts = []string{
			`CREATE FUNCTION refuse_charge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
			`CREATE TRIGGER refuse_charge BEFORE INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION refuse_charge()`,
		}
	default:
		stmts = []string{`DROP TRIGGER refuse_charge ON ledger`, `DROP FUNCTION refuse_charge()`}
	}
	for _, q := range stmts {
		if _, err := f.admin.Exec(q); err != nil {
			f.t.Fatalf("%s: %v", q, err)
		}
	}
}

// restart terminates the service's PostgreSQL connections, as a server
// restart or a pooler dropping them does (no-op on SQLite).
func (f *dbFault) restart() {
	f.t.Helper()
	if f.engine != store.Postgres {
		return
	}
	if _, err := f.admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, f.app); err != nil {
		f.t.Fatalf("terminate: %v", err)
	}
}

// settled waits until the settler has no record left for message id.
func (e *env) settled(t *testing.T, id int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.svc.settle.settling(id) {
		if time.Now().After(deadline) {
			t.Fatalf("message %d: the refused record was not written within 20 s", id)
		}
		<-e.attempts
	}
}

// After the carrier accepted, the database refuses the charge (and, on
// PostgreSQL, drops its connections): the client still gets 201, the message
// is not abandoned while the database is down, and the charge is recorded
// exactly once when the database answers again. Before the settler, the
// charge was never recorded (the message was abandoned by the reconciler).
func TestChargeRecordedAfterDatabaseRefusal(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e, f := newFaultEnv(t, engine)
			e.car.during = func(carrier.Message) {
				f.refuse(true)
				f.restart()
			}
			res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
			if err != nil || outcome != domain.SendCreated {
				t.Fatalf("send = %q %v, want created", outcome, err)
			}
			id := res.Messages[0].ID
			if total, n := e.ledger(t); n != 0 {
				t.Fatalf("charged while the database refused it: %d in %d rows", total, n)
			}
			// The reconciler, even with no age, must not abandon it: the
			// carrier is known to have it.
			if n, _ := e.svc.Reconcile(bg, 0); n != 0 {
				t.Errorf("reconcile abandoned %d message(s) the carrier accepted", n)
			}
			// A receipt while the database still refuses fails, and is kept.
			if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: time.Now()}); err == nil {
				t.Errorf("receipt stored while the database refuses charges")
			}
			f.refuse(false)
			e.settled(t, id)
			if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 0 {
				t.Errorf("reconcile after recovery = %d %v, want 0", n, err)
			}
			m := e.message(t, id)
			if m.Status != domain.StatusSent || m.CarrierRef == "" || m.DeliveryStatus != "delivered" {
				t.Errorf("message after recovery: %s ref %q delivery %q, want sent with the carrier's ref and the receipt", m.Status, m.CarrierRef, m.DeliveryStatus)
			}
			if total, n := e.ledger(t); total != 7900 || n != 1 {
				t.Errorf("ledger = %d in %d rows, want exactly one charge of 7900", total, n)
			}
			if n := e.events(t, "message.sent", id); n != 1 {
				t.Errorf("%d message.sent events, want 1", n)
			}
		})
	}
}

// A process that stopped after the carrier's answer (the intent pending, no
// acceptance recorded) is reconciled by the receipt; when the database
// refuses that receipt, it is retried, not dropped: before, the charge was
// lost whenever the carrier gave up re-sending the report.
func TestReceiptRetriedAfterDatabaseRefusal(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e, f := newFaultEnv(t, engine)
			e.failAt("after-carrier")
			e.svc.Send(bg, e.p, e.request(), nil)
			m := e.only(t)
			f.refuse(true)
			f.restart()
			if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered", At: time.Now()}); err == nil {
				t.Fatalf("receipt stored while the database refuses charges")
			}
			if n, _ := e.svc.Reconcile(bg, 0); n != 0 {
				t.Errorf("reconcile abandoned a message whose receipt is being retried")
			}
			f.refuse(false)
			e.settled(t, m.ID)
			if got := e.message(t, m.ID); got.Status != domain.StatusSent || got.DeliveryStatus != "delivered" {
				t.Errorf("after recovery: %s %q, want sent and delivered", got.Status, got.DeliveryStatus)
			}
			if total, n := e.ledger(t); total != 7900 || n != 1 {
				t.Errorf("ledger = %d in %d rows, want exactly one charge of 7900", total, n)
			}
		})
	}
}

// The settler stops as a background service; a record still refused is given up
// (and logged), and stopping does not hang.
func TestSettlerStops(t *testing.T) {
	e, f := newFaultEnv(t, store.SQLite)
	e.car.during = func(carrier.Message) { f.refuse(true) }
	if _, outcome, err := e.svc.Send(bg, e.p, e.request(), nil); err != nil || outcome != domain.SendCreated {
		t.Fatalf("send = %q %v", outcome, err)
	}
	<-e.attempts // one retry failed
	done := make(chan struct{})
	go func() { e.svc.Settler().Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
}
