package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/tcpproxy"
)

// cluster is several "switchboard serve" nodes on one PostgreSQL database
// behind a round-robin proxy, as a load balancer would put them. Every node's
// --public-url is the proxy, so the carrier's receipts reach whichever node
// is up.
type cluster struct {
	nodes []*crashSetup // each node's own address
	procs []*process
	// via is c with the proxy's address: its send and baseURL go through the
	// proxy.
	via *crashSetup
}

// startCluster starts n nodes for c's account and carrier; graceful nodes
// are stopped with SIGTERM at cleanup (and must exit cleanly), the others
// are for the test to kill.
func startCluster(t *testing.T, c *crashSetup, n int, graceful func(node int) bool) *cluster {
	t.Helper()
	cl := &cluster{}
	var targets []string
	for range n {
		node := *c
		node.port = crashFreePort(t)
		cl.nodes = append(cl.nodes, &node)
		targets = append(targets, fmt.Sprintf("127.0.0.1:%d", node.port))
	}
	proxy, err := tcpproxy.Listen("127.0.0.1:0", targets...)
	must(t, err)
	t.Cleanup(func() { proxy.Close() })
	via := *c
	fmt.Sscanf(proxy.Addr(), "127.0.0.1:%d", &via.port)
	cl.via = &via
	for i, node := range cl.nodes {
		node.publicURL = via.baseURL()
		cl.procs = append(cl.procs, node.launch(t, graceful(i)))
	}
	return cl
}

func (cl *cluster) bases() []string {
	var b []string
	for _, n := range cl.nodes {
		b = append(b, n.baseURL())
	}
	return b
}

func needPostgres(t *testing.T) string {
	t.Helper()
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	return storetest.DSN(t, store.Postgres)
}

// Three nodes on one database: the core walk sends on one node, replays each
// Idempotency-Key on the next and reads each send on the third; the same key
// sent to all three at once acts once; the scheduled-message dispatchers of
// all three send each of 200 messages due together exactly once.
func TestThreeNodesOneDatabase(t *testing.T) {
	db := needPostgres(t)
	t.Parallel()
	fake := newCrashKannel(t)
	c := crashProvision(t, db, fake)
	cl := startCluster(t, c, 3, func(int) bool { return true })
	w := newCoreWalk(t, db, c, cl.bases()...)
	w.run(t)

	// The same key and body on all three nodes at once: one message, one
	// carrier call; every 201 is that message, the others are told the
	// first is still in progress.
	accepted := len(fake.state().accepted)
	const keys = 8
	var wg sync.WaitGroup
	ids := make([][]int64, keys)
	var mu sync.Mutex
	for k := range keys {
		for node := range cl.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, _, raw := w.call(t, "POST", w.base(node)+apiPrefix+"/sms/messages", "",
					map[string]string{"Idempotency-Key": fmt.Sprintf("race-%d", k)},
					map[string]any{"from": c.from, "to": []string{fmt.Sprintf("1415555%04d", 5000+k)}, "message": fmt.Sprintf("race %d", k)})
				var env struct {
					Data struct {
						Messages []struct {
							ID int64 `json:"id"`
						} `json:"messages"`
					} `json:"data"`
				}
				switch {
				case status == 201 && json.Unmarshal(raw, &env) == nil && len(env.Data.Messages) == 1:
					mu.Lock()
					ids[k] = append(ids[k], env.Data.Messages[0].ID)
					mu.Unlock()
				case status == 409:
				default:
					t.Errorf("key race-%d on node %d: %d %s; want 201 or 409 (in progress)", k, node, status, raw)
				}
			}()
		}
	}
	wg.Wait()
	for k, got := range ids {
		if len(got) == 0 {
			t.Errorf("key race-%d: no node answered 201", k)
		}
		for _, id := range got[1:] {
			if id != got[0] {
				t.Errorf("key race-%d: 201s name messages %v, want one message", k, got)
			}
		}
	}
	st := crashOpenStore(t, db)
	crashWaitFor(t, "the raced sends are settled", func() string {
		if n := len(fake.state().accepted); n != accepted+keys {
			return fmt.Sprintf("the carrier accepted %d, want %d", n, accepted+keys)
		}
		return crashSettled(st, fake)
	})

	// 200 scheduled messages, due in the same second, scheduled through the
	// proxy: each reaches the carrier once. (Scheduling them takes about a
	// second here, many more on a loaded machine.)
	const scheduled = 200
	accepted = len(fake.state().accepted)
	sendAt := time.Now().Add(8 * time.Second).UTC().Truncate(time.Second)
	for w0 := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w0; i < scheduled; i += 8 {
				status, _, raw := w.call(t, "POST", cl.via.baseURL()+apiPrefix+"/sms/lines/"+c.from+"/scheduled", "", nil,
					map[string]any{"to": []string{fmt.Sprintf("+1415555%04d", 6000+i)}, "message": fmt.Sprintf("s%d", i), "sendAt": sendAt.Format(time.RFC3339)})
				if status != 201 {
					t.Errorf("schedule %d: %d %s", i, status, raw)
				}
			}
		}()
	}
	wg.Wait()
	if time.Now().After(sendAt) {
		t.Fatalf("scheduling ended %v after the send time", time.Since(sendAt))
	}
	crashWaitFor(t, "every scheduled message is sent", func() string {
		if n := len(fake.state().accepted) - accepted; n < scheduled {
			return fmt.Sprintf("%d of %d sent", n, scheduled)
		}
		return crashSettled(st, fake)
	})
	fs := fake.state()
	texts := map[string]int{}
	for _, text := range fs.accepted {
		texts[text]++
	}
	for i := range scheduled {
		if n := texts[fmt.Sprintf("s%d", i)]; n != 1 {
			t.Errorf("scheduled message s%d reached the carrier %d times, want once", i, n)
		}
	}
	for id, n := range fs.calls {
		if n != 1 {
			t.Errorf("message %d: %d carrier calls, want 1", id, n)
		}
	}
	ledger, _, _ := crashCharges(t, st, c.account)
	for id := range fs.accepted {
		if len(ledger[id]) != 1 {
			t.Errorf("message %d: charged %v, want once", id, ledger[id])
		}
	}
	if len(ledger) != len(fs.accepted) {
		t.Errorf("%d messages charged, carrier accepted %d", len(ledger), len(fs.accepted))
	}
}

// kill -9 of one of three nodes while 16 clients send through the proxy:
// the other two take the load (the proxy passes over the dead node), settle
// what the dead one left (its reconciler's work, its messages' receipts),
// and the money invariant of the one-node crash test holds. Directly on
// PostgreSQL, and through PgBouncer when it is installed.
func TestThreeNodesKillOneUnderLoad(t *testing.T) {
	t.Run("direct", func(t *testing.T) {
		db := needPostgres(t)
		t.Parallel()
		killOneOfThree(t, db, "")
	})
	t.Run("pgbouncer", func(t *testing.T) {
		if storetest.PostgresURL(t) == "" {
			t.Skip("needs PostgreSQL")
		}
		bin := pgbouncerBinary(t)
		t.Parallel()
		direct := dedicatedDatabase(t)
		killOneOfThree(t, direct, startPgBouncer(t, bin, direct))
	})
}

// killOneOfThree runs the kill test on the database at db, with the nodes
// reaching it through the PgBouncer URL bouncer unless that is "".
func killOneOfThree(t *testing.T, db, bouncer string) {
	const clients = 16
	fake := newCrashKannel(t)
	// Latency at the carrier keeps requests in flight on every node, the
	// killed one included.
	fake.before = func(ctx context.Context, _ int64) bool {
		select {
		case <-time.After(time.Duration(rand.IntN(8)) * time.Millisecond):
			return true
		case <-ctx.Done():
			return false
		}
	}
	fake.after = func(context.Context, int64) { time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond) }
	fake.dlrDelay = func() time.Duration { return time.Duration(50+rand.IntN(250)) * time.Millisecond }
	c := crashProvision(t, db, fake)
	if bouncer != "" {
		nodes := *c
		nodes.db, nodes.extra = bouncer, []string{"--db-pgbouncer", "--database-listen-url", db}
		c = &nodes
	}
	cl := startCluster(t, c, 3, func(node int) bool { return node != 0 })
	cl.via.db = db // the checker reads PostgreSQL itself
	load := crashStartLoad(t, cl.via, clients)
	load.waitCreated(t, "the load under way before the kill", crashLoadSends)
	crashKill(t, cl.procs[0])
	load.waitCreated(t, "the load served by the other nodes", load.created()+crashLoadSends)
	outcomes := load.finish()
	crashCheckMoney(t, cl.via, outcomes, clients)
}
