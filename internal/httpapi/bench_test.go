package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// BenchmarkListUsers measures GET /users with 50 users through the router,
// authentication and a real SQLite store (no network).
func BenchmarkListUsers(b *testing.B) {
	st := storetest.Open(b, store.SQLite)
	a := storetest.Account(b, st, nil)
	for i := range 50 {
		storetest.User(b, st, a.ID, &storetest.UserOpts{FirstName: fmt.Sprint("F", i), LastName: fmt.Sprint("L", i%17), Username: fmt.Sprint("u", i),
			Extensions: []string{fmt.Sprint(100 + i)}, Fill: func(u *domain.User) {
				u.Email, u.TimeZone = fmt.Sprintf("u%d@bench.example", i), "America/Chicago"
			}})
	}
	_, key := storetest.Key(b, st, a.ID, auth.UsersRead)
	h := httpapi.New(httpapi.Config{Store: st, Auth: &auth.Authenticator{Store: st}, SMS: sms.New(sms.Config{Store: st}), Users: users.New(users.Config{Store: st}), Webhooks: webhooks.New(webhooks.Config{Store: st}), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/api/public/v1/users", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
}
