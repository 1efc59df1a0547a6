// Command revocation measures how long a PostgreSQL node's read cache keeps
// accepting an API key after another node (or the CLI) revoked it: the time
// from the revoking transaction's commit to the first read on the other node
// that sees the key revoked. Two stores on one fresh schema stand for the two
// processes; each has its own connections, so the notification takes the
// same path through PostgreSQL as between machines.
//
//	go run ./bench/revocation -db postgres://… [-n 1000]
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

func main() {
	db := flag.String("db", os.Getenv("SWITCHBOARD_TEST_POSTGRES"), "PostgreSQL URL; a fresh schema is made in it and dropped after")
	n := flag.Int("n", 1000, "revocations to measure")
	flag.Parse()
	if err := run(*db, *n); err != nil {
		fmt.Fprintln(os.Stderr, "revocation:", err)
		os.Exit(1)
	}
}

func run(base string, n int) error {
	ctx := context.Background()
	dsn, drop, err := freshSchema(base)
	if err != nil {
		return err
	}
	defer drop()
	node, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer node.Close()
	if err := node.Migrate(ctx); err != nil {
		return err
	}
	other, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer other.Close()
	for deadline := time.Now().Add(10 * time.Second); !node.CacheServing(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the node's read cache never started serving")
		}
	}
	acct := domain.Account{Name: "revocation bench"}
	if err := other.CreateAccount(ctx, &acct); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		k := domain.APIKey{AccountID: acct.ID, Name: "k", Prefix: "sb_bench", Hash: fmt.Appendf(nil, "hash-%d", i), Scopes: []string{"users:read"}}
		if err := other.CreateAPIKey(ctx, &k); err != nil {
			return err
		}
		// Warm the node: the key is read until its cache holds it.
		for range 3 {
			if got, err := node.APIKeyByHash(store.WithReadScope(ctx), k.Hash); err != nil || got.RevokedAt != nil {
				return fmt.Errorf("key %d before revoking: %+v, %v", i, got, err)
			}
		}
		if err := other.RevokeAPIKey(ctx, acct.ID, k.ID); err != nil {
			return err
		}
		committed := time.Now()
		for {
			got, err := node.APIKeyByHash(store.WithReadScope(ctx), k.Hash)
			if err != nil {
				return err
			}
			if got.RevokedAt != nil {
				lat = append(lat, time.Since(committed))
				break
			}
			if time.Since(committed) > 10*time.Second {
				return fmt.Errorf("key %d still accepted 10 s after its revocation", i)
			}
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	over := len(lat) - func() int { i, _ := slices.BinarySearch(lat, 100*time.Millisecond); return i }()
	fmt.Printf("revocations: %d\nmin %v  p50 %v  p90 %v  p99 %v  max %v\nover 100 ms: %d\n",
		len(lat), lat[0], pct(0.50), pct(0.90), pct(0.99), lat[len(lat)-1], over)
	return nil
}

// freshSchema makes a schema in base's database and returns a URL that uses
// it, and a function that drops it.
func freshSchema(base string) (string, func(), error) {
	var b [6]byte
	rand.Read(b[:])
	schema := "bench_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		return "", nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		admin.Close()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); admin.Close() }, nil
}
