package users_test

import (
	"context"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
)

func TestListAppliesRoleVisibility(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil)
		var ids []int64
		for range 3 {
			ids = append(ids, storetest.User(t, st, a.ID, nil).ID)
		}
		for _, tc := range []struct {
			name    string
			p       auth.Principal
			want    int
			wantErr domain.Code
		}{
			{"api key sees everyone", auth.Principal{AccountID: a.ID}, 3, ""},
			{"users:all", auth.Principal{AccountID: a.ID, UserID: ids[1], Permissions: domain.Permissions{Users: domain.UsersAll}}, 3, ""},
			{"users:self", auth.Principal{AccountID: a.ID, UserID: ids[1], Permissions: domain.Permissions{Users: domain.UsersSelf}}, 1, ""},
			{"no users permission", auth.Principal{AccountID: a.ID, UserID: ids[1]}, 0, domain.PermissionDenied},
		} {
			got, err := users.New(users.Config{Store: st}).List(ctx, tc.p)
			if tc.wantErr != "" {
				if domain.ErrorCode(err) != tc.wantErr {
					t.Errorf("%s: err = %v, want %s", tc.name, err, tc.wantErr)
				}
				continue
			}
			if err != nil || len(got) != tc.want {
				t.Errorf("%s: got %d users (%v), want %d", tc.name, len(got), err, tc.want)
			}
			if tc.want == 1 && got[0].ID != ids[1] {
				t.Errorf("%s: got user %d, want the caller %d", tc.name, got[0].ID, ids[1])
			}
		}
	})
}
