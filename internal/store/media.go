package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"switchboard/internal/bytesize"
	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Hosted media: every file the server hosts for messages (an upload of POST
// /sms/media, or a send's attachment) is a hosted_media row, with its bytes
// counted in accounts.media_used against accounts.media_quota, and refs, the
// number of messages rows (scheduled placeholders included) that list it.
// Each of these is kept in the transaction that changes what it counts, so
// the quota is exact under concurrency and the cleanup can never remove a
// file a message or a pending schedule has just started to use: it deletes
// only rows still unused in its own transaction, and the blob after the row.

// DefaultMediaQuota is a new account's hosted-media quota: 1 GiB.
const DefaultMediaQuota int64 = 1 << 30

// MediaUsage is an account's hosted media: the bytes its files take and the
// most they may take.
type MediaUsage struct {
	Used, Quota int64
}

// MediaUsage returns the account's hosted-media usage and quota.
func (s *Store) MediaUsage(ctx context.Context, accountID int64) (MediaUsage, error) {
	var u MediaUsage
	err := s.db.QueryRow(ctx, `SELECT media_used, media_quota FROM accounts WHERE id = ?`, accountID).Scan(&u.Used, &u.Quota)
	if err != nil {
		return u, fmt.Errorf("store: media usage: %w", notFound(err, "account"))
	}
	return u, nil
}

// MediaUsages returns every account's hosted-media usage and quota, by id.
func (s *Store) MediaUsages(ctx context.Context) (map[int64]MediaUsage, error) {
	rows, err := s.db.Query(ctx, `SELECT id, media_used, media_quota FROM accounts`)
	if err != nil {
		return nil, fmt.Errorf("store: media usage: %w", err)
	}
	defer rows.Close()
	out := map[int64]MediaUsage{}
	for rows.Next() {
		var id int64
		var u MediaUsage
		if err := rows.Scan(&id, &u.Used, &u.Quota); err != nil {
			return nil, fmt.Errorf("store: media usage: %w", err)
		}
		out[id] = u
	}
	return out, rows.Err()
}

// SetMediaQuota sets the account's hosted-media quota in bytes. A quota
// below what the account already uses keeps its files; only new ones are
// refused until enough is removed.
func (s *Store) SetMediaQuota(ctx context.Context, accountID, quota int64) error {
	if quota < 0 {
		return domain.Errorf(domain.Invalid, "the media quota cannot be negative")
	}
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE accounts SET media_quota = ? WHERE id = ?`, quota, accountID)
		if err != nil {
			return fmt.Errorf("store: set media quota: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "account %d not found", accountID)
		}
		return nil
	})
}

// CheckMediaQuota is the quota's answer for size more bytes from what the
// account uses now: a read, so that an upload beyond the quota is refused
// before its file is written. The reservation in the upload's transaction
// is what makes the quota exact.
func (s *Store) CheckMediaQuota(ctx context.Context, accountID, size int64, what string) error {
	u, err := s.MediaUsage(ctx, accountID)
	if err != nil {
		return err
	}
	if u.Used+size > u.Quota {
		return quotaError(u, size, what)
	}
	return nil
}

// quotaError is the 409 of an upload or send whose files (size bytes,
// described by what) do not fit in the account's quota.
func quotaError(u MediaUsage, size int64, what string) error {
	return domain.Errorf(domain.Conflict, "hosted media would exceed the account's quota of %s (in use: %s; %s: %s)",
		bytesize.Format(u.Quota), bytesize.Format(u.Used), what, bytesize.Format(size))
}

// AddHostedMedia records that m.Name, already stored in the blob store, is
// the account's, unused so far: its bytes are reserved against the quota in
// the same transaction (409 beyond it).
func (s *Store) AddHostedMedia(ctx context.Context, m *domain.HostedMedia) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		if err := reserveMedia(ctx, tx, m.AccountID, m.Size, "this upload"); err != nil {
			return err
		}
		if err := insertHosted(ctx, tx, m, 0); err != nil {
			return err
		}
		m.CreatedAt = fromMicros(tx.Now())
		return nil
	})
}

// reserveMedia adds size bytes to the account's usage if they fit in its
// quota, and otherwise fails with the quota's 409. The guard is in the
// UPDATE itself: on PostgreSQL a concurrent reservation waits for the row
// and re-reads it, so two that only fit one at a time cannot both pass.
func reserveMedia(ctx context.Context, tx *Tx, accountID, size int64, what string) error {
	res, err := tx.Exec(ctx, `UPDATE accounts SET media_used = media_used + ? WHERE id = ? AND media_used + ? <= media_quota`, size, accountID, size)
	if err != nil {
		return fmt.Errorf("store: reserve media: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var u MediaUsage
	err = tx.QueryRow(ctx, `SELECT media_used, media_quota FROM accounts WHERE id = ?`, accountID).Scan(&u.Used, &u.Quota)
	if err != nil {
		return fmt.Errorf("store: reserve media: %w", notFound(err, "account"))
	}
	return quotaError(u, size, what)
}

// insertHosted writes m's row, used by refs messages (0: unused from now).
func insertHosted(ctx context.Context, tx *Tx, m *domain.HostedMedia, refs int) error {
	var by, unused any
	if m.CreatedBy != 0 {
		by = m.CreatedBy
	}
	if refs == 0 {
		unused = tx.Now()
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hosted_media (name, account_id, content_type, size, created_by, created_at, refs, unused_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		m.Name, m.AccountID, m.ContentType, m.Size, by, tx.Now(), refs, unused); err != nil {
		return fmt.Errorf("store: add hosted media: %w", err)
	}
	return nil
}

// recordOutboundMedia is the hosted-media part of an intent that lists
// media: a direct send's new attachments (o.Hosted) are recorded, their
// bytes reserved (409 beyond the quota), each used by the message; a
// scheduled send's files, hosted already, gain a use. A file of a schedule
// that is somehow no longer recorded is not a reason to stop the send.
func recordOutboundMedia(ctx context.Context, tx *Tx, o *Outbound) error {
	if len(o.Hosted) == 0 {
		_, err := useMedia(ctx, tx, o.AccountID, o.Media)
		return err
	}
	var size int64
	for _, h := range o.Hosted {
		size += h.Size
	}
	what := "these attachments"
	if len(o.Hosted) == 1 {
		what = "this attachment"
	}
	if err := reserveMedia(ctx, tx, o.AccountID, size, what); err != nil {
		return err
	}
	for i := range o.Hosted {
		if err := insertHosted(ctx, tx, &o.Hosted[i], 1); err != nil {
			return err
		}
	}
	return nil
}

// useMedia counts one more use of each of names (a message or placeholder
// that lists it), which the account must have hosted. It returns the index
// of the first name that is not the account's (then the caller decides
// whether that fails its write), or -1.
func useMedia(ctx context.Context, tx *Tx, accountID int64, names []string) (int, error) {
	missing := -1
	for i, n := range names {
		res, err := tx.Exec(ctx, `UPDATE hosted_media SET refs = refs + 1, unused_since = NULL WHERE name = ? AND account_id = ?`, n, accountID)
		if err != nil {
			return 0, fmt.Errorf("store: use hosted media: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 && missing < 0 {
			missing = i
		}
	}
	return missing, nil
}

// NotHostedError is CreateScheduled's refusal of media[Index], which is not
// (or no longer) a file hosted for the account.
type NotHostedError struct{ Index int }

func (e *NotHostedError) Error() string {
	return fmt.Sprintf("store: media[%d] is not hosted for the account", e.Index)
}

// releaseMedia counts one use less of each of names (a message or
// placeholder that listed them is gone, or no longer lists them). A file
// left unused waits for the cleanup, from now; with drop (the message was
// erased for good) it is removed at once instead: its row here, its bytes
// from the usage, and its name returned for the caller to delete the blob
// once this transaction has committed. Names the server does not host (an
// inbound message's carrier URLs) are ignored.
func releaseMedia(ctx context.Context, tx *Tx, names []string, drop bool) ([]string, error) {
	var dropped []string
	freed := map[int64]int64{}
	for _, n := range names {
		res, err := tx.Exec(ctx, `UPDATE hosted_media SET refs = refs - 1, unused_since = CASE WHEN refs = 1 THEN ? ELSE unused_since END WHERE name = ? AND refs > 0`, tx.Now(), n)
		if err != nil {
			return nil, fmt.Errorf("store: release hosted media: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 || !drop {
			continue
		}
		var account, size int64
		err = tx.QueryRow(ctx, `DELETE FROM hosted_media WHERE name = ? AND refs = 0 RETURNING account_id, size`, n).Scan(&account, &size)
		if errors.Is(err, sql.ErrNoRows) {
			continue // still used by another message
		}
		if err != nil {
			return nil, fmt.Errorf("store: drop hosted media: %w", err)
		}
		freed[account] += size
		dropped = append(dropped, n)
	}
	return dropped, freeMedia(ctx, tx, freed)
}

// freeMedia takes removed files' bytes off their accounts' usage, in
// account order, so that concurrent transactions lock accounts alike.
func freeMedia(ctx context.Context, tx *Tx, freed map[int64]int64) error {
	for _, account := range slices.Sorted(maps.Keys(freed)) {
		if _, err := tx.Exec(ctx, `UPDATE accounts SET media_used = media_used - ? WHERE id = ?`, freed[account], account); err != nil {
			return fmt.Errorf("store: free media: %w", err)
		}
	}
	return nil
}

// DropFailedMedia removes the attachments of message id, which the carrier
// refused (status failed): the client was told nothing was sent, so nobody
// holds its URLs, and a retry must not pay for them twice against the quota.
// The message no longer lists them. It returns the names whose blobs the
// caller deletes (a file another message also uses stays).
func (s *Store) DropFailedMedia(ctx context.Context, id int64) ([]string, error) {
	var dropped []string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		dropped = nil
		var media string
		err := tx.QueryRow(ctx, `SELECT media FROM messages WHERE id = ? AND status = ?`+tx.ForUpdate(), id, domain.StatusFailed).Scan(&media)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && media == "[]") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: drop failed media: %w", err)
		}
		var names []string
		if err := json.Unmarshal([]byte(media), &names); err != nil {
			return fmt.Errorf("store: drop failed media: message %d: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET media = '[]' WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: drop failed media: %w", err)
		}
		dropped, err = releaseMedia(ctx, tx, names, true)
		return err
	})
	return dropped, err
}

// PruneHostedMedia removes at most batch files no message or pending
// schedule has used for unusedFor (rows, and their bytes from their
// accounts' usage) and returns their names, whose blobs the caller deletes
// once this has returned: the row goes first, so a crash in between leaves
// an orphan blob, never a row whose file is missing. Several nodes may run
// it at once: each row is deleted by one of them.
func (s *Store) PruneHostedMedia(ctx context.Context, unusedFor time.Duration, batch int) ([]string, error) {
	var names []string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		names = names[:0]
		cutoff := tx.Now() - unusedFor.Microseconds()
		freed := map[int64]int64{}
		// The outer conditions are checked again on the row as it is when
		// deleted (PostgreSQL re-reads a row a concurrent write changed),
		// so a file used since the inner SELECT stays.
		err := tx.Query(ctx, `DELETE FROM hosted_media WHERE refs = 0 AND unused_since <= ? AND name IN (
			SELECT name FROM hosted_media WHERE unused_since <= ? AND refs = 0 ORDER BY unused_since LIMIT ?) RETURNING name, account_id, size`,
			[]any{cutoff, cutoff, batch}, func(r row) error {
				var n string
				var account, size int64
				if err := r.Scan(&n, &account, &size); err != nil {
					return err
				}
				names = append(names, n)
				freed[account] += size
				return nil
			})
		if err != nil {
			return fmt.Errorf("store: prune hosted media: %w", err)
		}
		return freeMedia(ctx, tx, freed)
	})
	return names, err
}
