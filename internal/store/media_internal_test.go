package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/money"
)

// TestNoMediaNoMediaStatements: the hosted-media bookkeeping costs a send,
// a schedule or a cancellation without media nothing: none of them runs a
// statement on hosted_media or the account's usage (read from the
// statements the SQLite committer prepared); one with media does.
func TestNoMediaNoMediaStatements(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	defer s.Close()
	a := domain.Account{Name: "Acme"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateAccount(ctx, &a))
	line := domain.Line{AccountID: a.ID, Number: "14155550100", SMSEnabled: true}
	must(s.CreateLine(ctx, &line))
	mediaStatements := func() []string {
		var out []string
		for _, q := range s.db.PreparedWrites() {
			if strings.Contains(q, "hosted_media") || strings.Contains(q, "media_used") {
				out = append(out, q)
			}
		}
		return out
	}
	out := func(media []string, hosted []domain.HostedMedia) *Outbound {
		return &Outbound{AccountID: a.ID, LineID: line.ID, From: line.Number, To: []string{"14155550123"}, Participants: "14155550123",
			Body: "hi", Media: media, Hosted: hosted, Type: domain.BillingSMS, Units: 1}
	}
	_, err := s.CreateOutbound(ctx, out(nil, nil))
	must(err)
	m := domain.ScheduledMessage{AccountID: a.ID, LineID: line.ID, Line: line.Number, Recipients: []string{"14155550123"},
		UnitPrices: []money.Micros{1}, Text: "later", Type: domain.BillingSMS, Units: 1, SendAt: time.Now().Add(time.Hour)}
	must(s.CreateScheduled(ctx, &m, nil))
	must(s.CancelScheduled(ctx, line, m.ID))
	if got := mediaStatements(); len(got) != 0 {
		t.Errorf("writes without media ran hosted-media statements: %q", got)
	}

	_, err = s.CreateOutbound(ctx, out([]string{"a.png"}, []domain.HostedMedia{{Name: "a.png", AccountID: a.ID, ContentType: "image/png", Size: 1}}))
	must(err)
	if got := mediaStatements(); len(got) == 0 {
		t.Errorf("a send with an attachment ran no hosted-media statement: this test sees nothing")
	}
}

// openSQLite opens and migrates a fresh SQLite store; the caller closes it.
func openSQLite(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s
}
