package oauth_test

import (
	"context"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestPrunerRemovesUnusedClients runs the pruning service's first pass and
// checks that it pruned: a client registered more than OAuthUnusedClientTTL
// ago and never authorized is gone.
func TestPrunerRemovesUnusedClients(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := store.OAuthClient{ClientID: "stale-client", Name: "Stale", RedirectURIs: []string{"https://app.example/cb"}}
		if err := st.CreateOAuthClient(ctx, &c); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(store.OAuthUnusedClientTTL + time.Hour)
		st.SetClock(func() time.Time { return later })

		p := oauth.New(oauth.Config{Store: st, Issuer: "http://sb.example"}).Pruner()
		if p.Interval() != oauth.PruneInterval {
			t.Errorf("interval = %v, want %v", p.Interval(), oauth.PruneInterval)
		}
		p.TestSignals.Init()
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		if err := p.TestSignals.Pass.WaitOrTimeout(t); err != nil {
			t.Fatalf("prune pass: %v", err)
		}
		if _, err := st.OAuthClient(ctx, c.ClientID); !domain.IsNotFound(err) {
			t.Fatalf("unused client after the pass: err %v, want not found", err)
		}
	})
}
