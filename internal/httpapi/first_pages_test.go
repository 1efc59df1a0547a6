package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"

	"switchboard/internal/apitest"
	"switchboard/internal/carrier"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestFirstPagesExact checks that the first pages and unread counts kept
// encoded in memory (inbox.ListEncoded, inbox.UnreadEncoded) are never older than a write: two nodes over one
// database (on SQLite the second plays the CLI or any other process), random
// writes through either, and after each every first page of three callers
// read from both at once and compared byte for byte with a third node that
// keeps no pages (every answer from SQL): a client whose write one node
// answered reads no older page from either (on SQLite the WAL index shows
// any process's commit; on PostgreSQL the other node passes a fence behind
// the write's notification, pagefence.go).
func TestFirstPagesExact(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			dsn := storetest.DSN(t, e)
			open := func(opt store.Options) *store.Store {
				st, err := store.OpenWith(ctx, dsn, opt)
				must(t, err)
				t.Cleanup(func() { st.Close() })
				must(t, st.Migrate(ctx))
				return st
			}
			stA, stB := open(store.Options{}), open(store.Options{})
			f := setupInboxOn(t, stA)
			urlB, smsB := serveInbox(t, stB)
			ref, _ := serveInbox(t, open(store.Options{PageBytes: -1}))
			for _, st := range []*store.Store{stA, stB} {
				apitest.Eventually(t, "a node's read cache to serve", st.CacheServing)
			}
			type node struct {
				url string
				st  *store.Store
				sms *sms.Service
			}
			nodes := []node{{f.url, stA, f.sms}, {urlB, stB, smsB}}

			get := func(base, cred, query string) []byte {
				t.Helper()
				req, err := http.NewRequest("GET", base+"/api/public/v1/sms/"+query, nil)
				must(t, err)
				req.Header.Set("Authorization", "Bearer "+cred)
				resp, err := f.client.Do(req)
				must(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				must(t, err)
				if resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d %s", query, resp.StatusCode, b)
				}
				return b
			}
			type read struct{ cred, query string }
			var reads []read
			for _, cred := range []string{f.maxTok, f.agnesTok, f.key} {
				for _, q := range []string{"", "?unread=true", "?unread=true&unassigned=true", "?unresolved=true", "?resolved=true",
					"?lines=" + inboxDesk, "?limit=2", "?unread=true&limit=1"} {
					reads = append(reads, read{cred, "conversations" + q})
				}
				if cred != f.key {
					reads = append(reads, read{cred, "conversations?assignedToMe=true"})
				}
				reads = append(reads, read{cred, "unread"}, read{cred, "unread?lines=" + inboxDesk})
			}
			// agree reports the first read on which n differs from the
			// reference, or "".
			agree := func(n node) string {
				for _, r := range reads {
					want := get(ref, r.cred, r.query)
					if got := get(n.url, r.cred, r.query); !bytes.Equal(got, want) {
						return fmt.Sprintf("%s (caller %.8s…):\n got %s\nwant %s", r.query, r.cred, got, want)
					}
				}
				return ""
			}

			rng := rand.New(rand.NewPCG(26, uint64(len(e))))
			custs := []string{custA, custB, custC, custD}
			lines := []string{inboxMain, inboxDesk, inboxHidden}
			toks := []string{f.maxTok, f.agnesTok, f.key}
			served := 0
			for round := range 80 {
				wi := rng.IntN(2)
				w := nodes[wi]
				line, cust := lines[rng.IntN(len(lines))], custs[rng.IntN(len(custs))]
				path := "/sms/conversations/" + line + "/" + cust
				var what string
				switch k := rng.IntN(8); {
				case k < 3 || round < 4:
					what = "inbound text"
					must(t, w.sms.Inbound(ctx, carrier.Inbound{From: cust, To: line, Text: fmt.Sprintf("text %d", round)}))
				case k == 3:
					what = "send"
					f.send(t, line, f.max.ID, fmt.Sprintf("reply %d", round), cust)
				default:
					cred := toks[rng.IntN(len(toks))]
					if cred == f.agnesTok && line == inboxHidden {
						cred = f.maxTok // Agnes may not see that line
					}
					ops := []struct{ method, suffix, body string }{
						{"GET", "?markRead=true&limit=1", ""},
						{"POST", "/resolve", "{}"},
						{"POST", "/reopen", ""},
						{"POST", "/assign", fmt.Sprintf(`{"userId":%d}`, f.agnes.ID)},
						{"POST", "/assign", `{"userId":null}`},
						{"DELETE", "", ""},
					}
					op := ops[rng.IntN(len(ops))]
					what = op.method + " " + path + op.suffix
					req, err := http.NewRequest(op.method, w.url+"/api/public/v1"+path+op.suffix, bytes.NewReader([]byte(op.body)))
					must(t, err)
					req.Header.Set("Authorization", "Bearer "+cred)
					if op.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					resp, err := f.client.Do(req)
					must(t, err)
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					// not_found (a thread never texted or deleted) changes
					// nothing and is as good a write to check as any.
					if resp.StatusCode >= 300 && resp.StatusCode != 404 {
						t.Fatalf("round %d: %s: %d %s", round, what, resp.StatusCode, body)
					}
				}
				// Both nodes, at once.
				for i, n := range nodes {
					if diff := agree(n); diff != "" {
						t.Fatalf("round %d, after %s through node %d: node %d differs at %s", round, what, wi, i, diff)
					}
				}
				// Both nodes now hold the pages just read: the next round's
				// write must make them stale, or a node answers old data.
				for _, n := range nodes {
					if entries, _ := n.st.PageStats(); entries > 0 {
						served++
					}
				}
			}
			if served == 0 {
				t.Fatal("no node ever kept a page: the test checked only SQL")
			}
		})
	}
}
