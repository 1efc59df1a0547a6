package sms_test

import (
	"context"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

func TestLinesApplyPhoneNumberPermission(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil)
		u1 := storetest.User(t, st, a.ID, nil)
		u2 := storetest.User(t, st, a.ID, nil)
		for _, l := range []storetest.LineOpts{
			{Number: "14155550100"},                          // everyone's
			{Number: "14155550101", UserIDs: []int64{u1.ID}}, // u1's
			{Number: "14155550102", UserIDs: []int64{u2.ID}}, // u2's
			{Number: "14155550103", NoSMS: true},             // no SMS
		} {
			storetest.Line(t, st, a.ID, &l)
		}
		for _, tc := range []struct {
			name    string
			p       auth.Principal
			want    []string
			wantErr domain.Code
		}{
			{"api key: every SMS line", auth.Principal{AccountID: a.ID}, []string{"14155550100", "14155550101", "14155550102"}, ""},
			{"numbers:all", auth.Principal{AccountID: a.ID, UserID: u1.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAll}}, []string{"14155550100", "14155550101", "14155550102"}, ""},
			{"numbers:assigned: own and unassigned", auth.Principal{AccountID: a.ID, UserID: u1.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAssigned}}, []string{"14155550100", "14155550101"}, ""},
			{"no numbers permission", auth.Principal{AccountID: a.ID, UserID: u1.ID}, nil, domain.PermissionDenied},
		} {
			got, err := sms.New(sms.Config{Store: st}).Lines(ctx, tc.p)
			if tc.wantErr != "" {
				if domain.ErrorCode(err) != tc.wantErr {
					t.Errorf("%s: err = %v, want %s", tc.name, err, tc.wantErr)
				}
				continue
			}
			var numbers []string
			for _, l := range got {
				numbers = append(numbers, l.Number)
			}
			if err != nil || len(numbers) != len(tc.want) {
				t.Fatalf("%s: got %v (%v), want %v", tc.name, numbers, err, tc.want)
			}
			for i := range numbers {
				if numbers[i] != tc.want[i] {
					t.Errorf("%s: got %v, want %v", tc.name, numbers, tc.want)
				}
			}
		}
		// The store's shared list must not be changed by filtering.
		if all, _ := sms.New(sms.Config{Store: st}).Lines(ctx, auth.Principal{AccountID: a.ID}); len(all) != 3 {
			t.Errorf("after filtering, an API key sees %d lines, want 3", len(all))
		}
	})
}
