package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// mediaWorld is an account with a line, on a store whose clock the test
// moves (now).
type mediaWorld struct {
	s    *store.Store
	acct domain.Account
	line domain.Line
	now  *atomic.Int64 // unix micros
	seq  int
}

func newMediaWorld(t *testing.T, s *store.Store) *mediaWorld {
	t.Helper()
	w := &mediaWorld{s: s, now: &atomic.Int64{}}
	w.now.Store(time.Now().UnixMicro())
	s.SetClock(func() time.Time { return time.UnixMicro(w.now.Load()) })
	w.acct = storetest.Account(t, s, nil)
	w.line = storetest.Line(t, s, w.acct.ID, nil)
	return w
}

func (w *mediaWorld) advance(d time.Duration) { w.now.Add(d.Microseconds()) }

// name is a new hosted name (the blob store is not involved here).
func (w *mediaWorld) name() string {
	w.seq++
	return fmt.Sprintf("file%04d-%d.png", w.seq, w.acct.ID)
}

// upload records an upload of size bytes (POST /sms/media).
func (w *mediaWorld) upload(t *testing.T, size int64) string {
	t.Helper()
	m := domain.HostedMedia{Name: w.name(), AccountID: w.acct.ID, ContentType: "image/png", Size: size}
	if err := w.s.AddHostedMedia(ctx, &m); err != nil {
		t.Fatalf("add hosted media: %v", err)
	}
	return m.Name
}

// send writes a direct send's intent to 14155550123 listing media; hosted
// are the sizes of new attachments it uploads (then media is ignored).
func (w *mediaWorld) send(t *testing.T, media []string, hosted ...int64) (int64, []string, error) {
	t.Helper()
	o := &store.Outbound{AccountID: w.acct.ID, LineID: w.line.ID, From: w.line.Number, To: []string{"14155550123"}, Participants: "14155550123",
		Body: "hi", Type: domain.BillingMMS, Units: 1, UnitPrice: 20000, Price: 20000}
	if len(hosted) > 0 {
		media = nil
		for _, size := range hosted {
			n := w.name()
			media = append(media, n)
			o.Hosted = append(o.Hosted, domain.HostedMedia{Name: n, AccountID: w.acct.ID, ContentType: "image/png", Size: size})
		}
	}
	o.Media = media
	id, err := w.s.CreateOutbound(ctx, o)
	return id, media, err
}

func (w *mediaWorld) schedule(t *testing.T, media ...string) (domain.ScheduledMessage, error) {
	t.Helper()
	m := domain.ScheduledMessage{AccountID: w.acct.ID, LineID: w.line.ID, Line: w.line.Number, Recipients: []string{"14155550123"},
		UnitPrices: []money.Micros{20000}, Media: media, Type: domain.BillingMMS, Units: 1, Price: 20000,
		SendAt: time.UnixMicro(w.now.Load()).Add(time.Hour)}
	err := w.s.CreateScheduled(ctx, &m, nil)
	return m, err
}

func (w *mediaWorld) usage(t *testing.T) int64 {
	t.Helper()
	u, err := w.s.MediaUsage(ctx, w.acct.ID)
	if err != nil {
		t.Fatalf("media usage: %v", err)
	}
	return u.Used
}

func (w *mediaWorld) prune(t *testing.T) []string {
	t.Helper()
	names, err := w.s.PruneHostedMedia(ctx, 24*time.Hour, 100)
	if err != nil {
		t.Fatalf("prune hosted media: %v", err)
	}
	slices.Sort(names)
	return names
}

func TestHostedMediaQuota(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		if u, err := s.MediaUsage(ctx, w.acct.ID); err != nil || u.Quota != store.DefaultMediaQuota || u.Used != 0 {
			t.Fatalf("a new account's media usage: %+v, %v; want 0 of 1 GiB", u, err)
		}
		must(t, s.SetMediaQuota(ctx, w.acct.ID, 100))
		w.upload(t, 60)
		err := s.AddHostedMedia(ctx, &domain.HostedMedia{Name: w.name(), AccountID: w.acct.ID, ContentType: "image/png", Size: 41})
		wantCode(t, err, domain.Conflict)
		if msg := err.Error(); !strings.Contains(msg, "quota of 100 B") || !strings.Contains(msg, "in use: 60 B") || !strings.Contains(msg, "this upload: 41 B") {
			t.Errorf("upload beyond the quota: %q; want it to name the quota, the usage and the upload", msg)
		}
		if err := s.CheckMediaQuota(ctx, w.acct.ID, 41, "this upload"); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("CheckMediaQuota of 41 more bytes: %v, want conflict", err)
		}
		// A send's attachments count too, all of them or none.
		if _, _, err := w.send(t, nil, 30, 11); domain.ErrorCode(err) != domain.Conflict || !strings.Contains(err.Error(), "these attachments: 41 B") {
			t.Errorf("send beyond the quota: %v, want conflict naming the attachments", err)
		}
		if n := s.CountRows(ctx, "messages"); n != 0 {
			t.Errorf("a refused send wrote %d messages", n)
		}
		if _, _, err := w.send(t, nil, 40); err != nil {
			t.Fatalf("send that fits exactly: %v", err)
		}
		if got := w.usage(t); got != 100 {
			t.Errorf("usage %d, want 100", got)
		}
		// Lowering the quota below the usage keeps the files.
		must(t, s.SetMediaQuota(ctx, w.acct.ID, 10))
		if got := w.usage(t); got != 100 {
			t.Errorf("usage after lowering the quota: %d, want 100", got)
		}
		wantCode(t, s.SetMediaQuota(ctx, 999999, 10), domain.NotFound)
		wantCode(t, s.SetMediaQuota(ctx, w.acct.ID, -1), domain.Invalid)
	})
}

// TestHostedMediaQuotaIsExactUnderConcurrency: uploads racing for the last
// bytes of the quota cannot both pass; the usage is the sum of the winners.
func TestHostedMediaQuotaIsExactUnderConcurrency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		must(t, s.SetMediaQuota(ctx, w.acct.ID, 1000))
		const n = 24 // of 100 bytes each: 10 fit
		var wg sync.WaitGroup
		var ok, refused atomic.Int64
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if i%3 == 0 { // some as sends with one attachment
					o := &store.Outbound{AccountID: w.acct.ID, LineID: w.line.ID, From: w.line.Number, To: []string{"14155550123"}, Participants: "14155550123",
						Body: "hi", Type: domain.BillingMMS, Units: 1}
					name := fmt.Sprintf("race%d.png", i)
					o.Media, o.Hosted = []string{name}, []domain.HostedMedia{{Name: name, AccountID: w.acct.ID, ContentType: "image/png", Size: 100}}
					_, err = s.CreateOutbound(ctx, o)
				} else {
					err = s.AddHostedMedia(ctx, &domain.HostedMedia{Name: fmt.Sprintf("race%d.png", i), AccountID: w.acct.ID, ContentType: "image/png", Size: 100})
				}
				switch {
				case err == nil:
					ok.Add(1)
				case domain.ErrorCode(err) == domain.Conflict:
					refused.Add(1)
				default:
					t.Errorf("upload %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 10 || refused.Load() != n-10 {
			t.Errorf("%d uploads passed and %d were refused; want exactly 10 and %d", ok.Load(), refused.Load(), n-10)
		}
		if got := w.usage(t); got != 1000 {
			t.Errorf("usage %d, want 1000", got)
		}
		if rows := s.CountRows(ctx, "hosted_media"); rows != 10 {
			t.Errorf("%d hosted_media rows, want 10", rows)
		}
	})
}

// TestHostedMediaCleanup: files no message or pending schedule uses are
// removed 24 hours after their upload (or after their last schedule was
// cancelled), with their bytes; files in use never are, and a file whose
// message is deleted goes at once unless another message still uses it.
func TestHostedMediaCleanup(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		unused := w.upload(t, 10)
		scheduled := w.upload(t, 20)
		cancelled := w.upload(t, 40)
		sched, err := w.schedule(t, scheduled)
		must(t, err)
		toCancel, err := w.schedule(t, cancelled)
		must(t, err)
		msgID, sent, err := w.send(t, nil, 80)
		must(t, err)
		markSent(t, s, msgID, "ref1") // only sent messages can be deleted
		if got := w.usage(t); got != 150 {
			t.Fatalf("usage %d, want 150", got)
		}

		w.advance(23 * time.Hour)
		if got := w.prune(t); len(got) != 0 {
			t.Errorf("pruned %v before 24 hours", got)
		}
		must(t, s.CancelScheduled(ctx, w.line, toCancel.ID))
		w.advance(2 * time.Hour)
		if got := w.prune(t); !slices.Equal(got, []string{unused}) {
			t.Errorf("pruned %v after 25 hours, want only the upload never used", got)
		}
		if got := w.usage(t); got != 140 {
			t.Errorf("usage %d after the cleanup, want 140", got)
		}
		// The cancelled schedule's file was unused from its cancellation.
		w.advance(22 * time.Hour)
		if got := w.prune(t); !slices.Equal(got, []string{cancelled}) {
			t.Errorf("pruned %v 24 hours after the cancellation, want the cancelled schedule's file", got)
		}
		w.advance(1000 * time.Hour)
		if got := w.prune(t); len(got) != 0 {
			t.Errorf("pruned %v: files in use (a pending schedule's, a sent message's)", got)
		}

		// A pruned file cannot be scheduled any more: refused as unknown.
		_, err = w.schedule(t, unused)
		if nh := (*store.NotHostedError)(nil); !errors.As(err, &nh) || nh.Index != 0 {
			t.Errorf("scheduling a removed file: %v, want NotHostedError for media[0]", err)
		}
		// Another account's file is not this account's.
		other := newMediaWorld(t, s)
		foreign := other.upload(t, 1)
		_, err = w.schedule(t, scheduled, foreign)
		if nh := (*store.NotHostedError)(nil); !errors.As(err, &nh) || nh.Index != 1 {
			t.Errorf("scheduling another account's file: %v, want NotHostedError for media[1]", err)
		}
		if l, _ := s.ScheduledMessages(ctx, w.line); len(l) != 1 {
			t.Errorf("%d schedules queued, want the first one only", len(l))
		}

		// A sent attachment also scheduled: deleting the message keeps it.
		_, err = w.schedule(t, sent[0])
		must(t, err)
		m, err := s.Message(ctx, w.acct.ID, msgID)
		must(t, err)
		dropped, err := s.DeleteMessage(ctx, m.ConversationID, msgID, store.Change{})
		must(t, err)
		if len(dropped) != 0 {
			t.Errorf("deleting a message dropped %v, still used by a schedule", dropped)
		}
		// Deleting the sent message of the other schedule drops its file at
		// once: nothing else uses it.
		_, err = s.ScheduledMessage(ctx, sched.ID)
		must(t, err)
		id2, sent2, err := w.send(t, nil, 5)
		must(t, err)
		markSent(t, s, id2, "ref2")
		dropped, err = s.DeleteMessage(ctx, m.ConversationID, id2, store.Change{})
		must(t, err)
		if !slices.Equal(dropped, sent2) {
			t.Errorf("deleting a message dropped %v, want its only-used file %v", dropped, sent2)
		}
		if got := w.usage(t); got != 100 {
			t.Errorf("usage %d, want 100 (the scheduled 20 and the sent-and-scheduled 80)", got)
		}
	})
}

// TestHostedMediaCleanupRacesAttach: a schedule taking an expired unused
// file while the cleanup runs either gets it (and it stays) or is refused
// (and it is gone); never a schedule whose file was removed.
func TestHostedMediaCleanupRacesAttach(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		const rounds = 30
		names := make([]string, rounds)
		for i := range names {
			names[i] = w.upload(t, 1)
		}
		w.advance(25 * time.Hour)
		scheduled := make([]bool, rounds)
		var pruned sync.Map
		var wg sync.WaitGroup
		for i, n := range names {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := w.schedule(t, n)
				if nh := (*store.NotHostedError)(nil); err != nil && !errors.As(err, &nh) {
					t.Errorf("schedule: %v", err)
				}
				scheduled[i] = err == nil
			}()
			go func() {
				defer wg.Done()
				got, err := s.PruneHostedMedia(ctx, 24*time.Hour, 1)
				if err != nil {
					t.Errorf("prune: %v", err)
				}
				for _, g := range got {
					pruned.Store(g, true)
				}
			}()
		}
		wg.Wait()
		for _, g := range w.prune(t) {
			pruned.Store(g, true)
		}
		kept := int64(0)
		for i, n := range names {
			_, gone := pruned.Load(n)
			if scheduled[i] == gone {
				t.Errorf("file %d: scheduled %t, removed %t; want exactly one", i, scheduled[i], gone)
			}
			if !gone {
				kept++
			}
		}
		if got := w.usage(t); got != kept {
			t.Errorf("usage %d, want the %d files kept", got, kept)
		}
	})
}

// TestHostedMediaRefusedSend: the carrier refused the send, the client was
// told nothing was sent: its attachments go, with their bytes.
func TestHostedMediaRefusedSend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		id, names, err := w.send(t, nil, 7, 8)
		must(t, err)
		if got, err := s.DropFailedMedia(ctx, id); err != nil || len(got) != 0 {
			t.Errorf("dropping the media of a pending message: %v, %v; want nothing", got, err)
		}
		if _, err := s.MarkUnsent(ctx, id, domain.StatusFailed); err != nil {
			t.Fatal(err)
		}
		got, err := s.DropFailedMedia(ctx, id)
		if err != nil || !slices.Equal(got, names) {
			t.Errorf("dropping the media of a refused message: %v, %v; want %v", got, err, names)
		}
		if u := w.usage(t); u != 0 {
			t.Errorf("usage %d, want 0", u)
		}
		if m, err := s.Message(ctx, w.acct.ID, id); err != nil || len(m.Media) != 0 {
			t.Errorf("the refused message still lists %v (%v)", m.Media, err)
		}
	})
}

// TestHostedMediaMigration: migration 0028 records the attachments of
// messages sent before it (size unknown: 0) with their uses, and the uses
// of uploads, so that they can be scheduled, are not taken for unused, and
// the account's usage is the uploads' bytes.
func TestHostedMediaMigration(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newMediaWorld(t, s)
		idle := w.upload(t, 10)
		used := w.upload(t, 20)
		_, err := w.schedule(t, used)
		must(t, err)
		_, sent, err := w.send(t, nil, 30)
		must(t, err)
		_, _, err = w.send(t, sent) // the same file sent twice
		must(t, err)
		failed, failedNames, err := w.send(t, nil, 40)
		must(t, err)
		_, err = s.MarkUnsent(ctx, failed, domain.StatusFailed)
		must(t, err)

		// Back to the schema before 0028, with the send's files unrecorded.
		must(t, s.Write(ctx, func(tx *store.Tx) error {
			for _, q := range []string{
				`DELETE FROM hosted_media WHERE name IN ('` + sent[0] + `', '` + failedNames[0] + `')`,
				`DROP INDEX hosted_media_unused`,
				`ALTER TABLE hosted_media DROP COLUMN refs`,
				`ALTER TABLE hosted_media DROP COLUMN unused_since`,
				`ALTER TABLE accounts DROP COLUMN media_quota`,
				`ALTER TABLE accounts DROP COLUMN media_used`,
				`DELETE FROM schema_migrations WHERE version = '0028_media_quota.sql'`,
			} {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		}))
		must(t, s.Migrate(ctx))

		if got := w.usage(t); got != 30 {
			t.Errorf("usage after the migration %d, want the uploads' 30 bytes", got)
		}
		// The sent file can be scheduled; the failed message's cannot.
		if _, err := w.schedule(t, sent[0]); err != nil {
			t.Errorf("scheduling a file sent before the migration: %v", err)
		}
		if _, err := w.schedule(t, failedNames[0]); err == nil {
			t.Errorf("a refused message's (deleted) file was recorded by the migration")
		}
		// Only the upload nobody used is unused.
		w.advance(25 * time.Hour)
		if got := w.prune(t); !slices.Equal(got, []string{idle}) {
			t.Errorf("pruned %v after the migration, want only %s", got, idle)
		}
	})
}

// markSent records outbound message id sent, with its event as the sms
// capability builds it.
func markSent(t *testing.T, s *store.Store, id int64, ref string) {
	t.Helper()
	line, to, err := s.OutboundParties(ctx, id)
	must(t, err)
	sent, err := smsevent.Sent(id, line, to)
	must(t, err)
	must(t, s.MarkSent(ctx, id, ref, sent))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
