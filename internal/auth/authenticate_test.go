package auth_test

import (
	"context"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// Every refusal is a value of its own: the HTTP layer adds the endpoint's
// scope to the error it gets, and a value shared between requests would
// carry one request's scope into another's challenge (a data race).
func TestAuthenticateRefusalsAreNotShared(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			a := &auth.Authenticator{Store: storetest.Open(t, engine)}
			for _, bearer := range []string{"garbage", "sbk_unknown", "sbat_unknown", "sbit_unknown"} {
				_, first := a.Authenticate(context.Background(), bearer)
				_, second := a.Authenticate(context.Background(), bearer)
				if domain.ErrorCode(first) != domain.Unauthenticated || domain.ErrorCode(second) != domain.Unauthenticated {
					t.Fatalf("%s: errors %v, %v, want unauthenticated", bearer, first, second)
				}
				if first == second {
					t.Errorf("%s: both refusals are the same value %p; each must be new", bearer, first)
				}
			}
		})
	}
}
