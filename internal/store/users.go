package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// CreateUser adds a user. A non-empty username must be unique across all
// accounts, because the sign-in page does not know the account.
func (s *Store) CreateUser(ctx context.Context, u *domain.User) error {
	lists, err := marshalLists(u.Extensions, u.Lines, u.Numbers, u.Voicemails)
	if err != nil {
		return err
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, u.AccountID); err != nil {
			return err
		}
		role, err := accountRole(ctx, tx, u.AccountID, u.RoleID)
		if err != nil {
			return err
		}
		var username any
		if u.Username != "" {
			username = u.Username
		}
		id, err := tx.Insert(ctx, `INSERT INTO users (account_id, role_id, username, password_hash, first_name, last_name, title, email, mobile, company, time_zone, extension, extensions, lines, numbers, voicemails, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.AccountID, role, username, u.PasswordHash, u.FirstName, u.LastName, u.Title, u.Email, u.Mobile, u.Company, u.TimeZone, u.Extension,
			lists[0], lists[1], lists[2], lists[3], tx.Now())
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "username %q is taken", u.Username)
		}
		if err != nil {
			return fmt.Errorf("store: create user: %w", err)
		}
		u.ID = id
		return nil
	})
}

// accountRole is the role_id column for roleID: NULL for 0, else roleID
// after checking it is one of the account's roles.
func accountRole(ctx context.Context, tx *Tx, accountID, roleID int64) (any, error) {
	if roleID == 0 {
		return nil, nil
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM roles WHERE id = ? AND account_id = ?`, roleID, accountID).Scan(&n); err != nil {
		return nil, fmt.Errorf("store: find role: %w", err)
	}
	if n == 0 {
		return nil, domain.Errorf(domain.NotFound, "role %d not found in account %d", roleID, accountID)
	}
	return roleID, nil
}

// UpdateUser saves u's details: everything CreateUser takes but the
// password (SetUserPassword), and not whether u is disabled (SetUserDisabled).
func (s *Store) UpdateUser(ctx context.Context, u domain.User) error {
	lists, err := marshalLists(u.Extensions, u.Lines, u.Numbers, u.Voicemails)
	if err != nil {
		return err
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		role, err := accountRole(ctx, tx, u.AccountID, u.RoleID)
		if err != nil {
			return err
		}
		var username any
		if u.Username != "" {
			username = u.Username
		}
		res, err := tx.Exec(ctx, `UPDATE users SET role_id = ?, username = ?, first_name = ?, last_name = ?, title = ?, email = ?, mobile = ?, company = ?,
			time_zone = ?, extension = ?, extensions = ?, lines = ?, numbers = ?, voicemails = ? WHERE id = ? AND account_id = ? AND deleted_at IS NULL`,
			role, username, u.FirstName, u.LastName, u.Title, u.Email, u.Mobile, u.Company, u.TimeZone, u.Extension,
			lists[0], lists[1], lists[2], lists[3], u.ID, u.AccountID)
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "username %q is taken", u.Username)
		}
		if err != nil {
			return fmt.Errorf("store: update user: %w", err)
		}
		return oneRow(res, "user")
	})
}

// SetUserPassword replaces the user's password hash (empty: the user cannot
// sign in) and revokes their OAuth grants: a reset signs the person out
// everywhere, as after a leaked password it must.
func (s *Store) SetUserPassword(ctx context.Context, accountID, id int64, hash string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE users SET password_hash = ? WHERE id = ? AND account_id = ? AND deleted_at IS NULL`, hash, id, accountID)
		if err != nil {
			return fmt.Errorf("store: set password: %w", err)
		}
		if err := oneRow(res, "user"); err != nil {
			return err
		}
		return revokeUserAccess(ctx, tx, id)
	})
}

// SetUserDisabled disables the user (they cannot sign in, and every OAuth
// grant and token of theirs is revoked in the same transaction) or enables
// them again (their revoked grants stay revoked: they sign in anew).
// Disabling a disabled user keeps the first time.
func (s *Store) SetUserDisabled(ctx context.Context, accountID, id int64, disabled bool) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		set, args := `disabled_at = NULL`, []any{id, accountID}
		if disabled {
			set, args = `disabled_at = COALESCE(disabled_at, ?)`, []any{tx.Now(), id, accountID}
		}
		res, err := tx.Exec(ctx, `UPDATE users SET `+set+` WHERE id = ? AND account_id = ? AND deleted_at IS NULL`, args...)
		if err != nil {
			return fmt.Errorf("store: disable user: %w", err)
		}
		if err := oneRow(res, "user"); err != nil || !disabled {
			return err
		}
		return revokeUserAccess(ctx, tx, id)
	})
}

// revokeUserAccess revokes every OAuth grant of the user with every token of
// them (their app sessions end with the grants: RefreshAppSession), and
// drops their sign-ins waiting for consent. Updating the grants
// first takes their row locks, so an issuance that locked a grant before
// finishes first and its tokens are revoked here too.
func revokeUserAccess(ctx context.Context, tx *Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `UPDATE oauth_grants SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL`, tx.Now(), userID); err != nil {
		return fmt.Errorf("store: revoke user grants: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET revoked_at = ? WHERE revoked_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE user_id = ?)`,
		tx.Now(), userID); err != nil {
		return fmt.Errorf("store: revoke user tokens: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_requests WHERE user_id = ?`, userID); err != nil {
		return fmt.Errorf("store: drop user sign-ins: %w", err)
	}
	return nil
}

// DeletedUser is what deleting a user changed besides the user.
type DeletedUser struct {
	// Unassigned counts the conversations that were assigned to the user
	// and now are to nobody.
	Unassigned int64
}

// DeleteUser deletes the account's user: they leave every list and lookup,
// their username is freed, their grants and tokens are revoked, their lines
// are no longer theirs and their conversations are unassigned (each with an
// unassign in its activity, by nobody). Their comments and activity stay,
// still naming their id, which is never given to anyone else (the row stays;
// see migration 0031). Refused while the user is the only one a line is
// assigned to: without them the line would be every user's.
func (s *Store) DeleteUser(ctx context.Context, accountID, id int64) (DeletedUser, error) {
	var out DeletedUser
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var n int
		err := tx.QueryRow(ctx, `SELECT 1 FROM users WHERE id = ? AND account_id = ? AND deleted_at IS NULL`+tx.ForUpdate(), id, accountID).Scan(&n)
		if err != nil {
			return fmt.Errorf("store: delete user: %w", notFound(err, "user"))
		}
		only, err := linesOnlyOf(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(only) > 0 {
			return domain.Errorf(domain.Conflict, "user %d is the only user of line %s: without them the line would be open to every user; give it other users first (switchboard line edit --users)",
				id, strings.Join(only, ", "))
		}
		if err := revokeUserAccess(ctx, tx, id); err != nil {
			return err
		}
		if out.Unassigned, err = unassignAll(ctx, tx, accountID, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM line_users WHERE user_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete user lines: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET deleted_at = ?, disabled_at = COALESCE(disabled_at, ?), username = NULL, password_hash = '' WHERE id = ?`,
			tx.Now(), tx.Now(), id); err != nil {
			return fmt.Errorf("store: delete user: %w", err)
		}
		return nil
	})
	return out, err
}

// linesOnlyOf lists the numbers of the lines assigned to the user alone.
func linesOnlyOf(ctx context.Context, tx *Tx, userID int64) ([]string, error) {
	var out []string
	err := tx.Query(ctx, `SELECT l.number FROM line_users lu JOIN lines l ON l.id = lu.line_id
		WHERE lu.user_id = ? AND NOT EXISTS (SELECT 1 FROM line_users o WHERE o.line_id = lu.line_id AND o.user_id <> lu.user_id) ORDER BY l.number`,
		[]any{userID}, func(r row) error {
			var number string
			err := r.Scan(&number)
			out = append(out, number)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("store: user's lines: %w", err)
	}
	return out, nil
}

// unassignAll gives the account's conversations assigned to the user to
// nobody, each with an unassign in its activity (by nobody: the operator),
// and returns how many there were.
func unassignAll(ctx context.Context, tx *Tx, accountID, userID int64) (int64, error) {
	ids, err := queryIDs(ctx, tx, `SELECT id FROM conversations WHERE account_id = ? AND assigned_to = ? ORDER BY id`, accountID, userID)
	if err != nil {
		return 0, fmt.Errorf("store: user's conversations: %w", err)
	}
	for _, conv := range ids {
		if _, err := tx.Exec(ctx, `UPDATE conversations SET assigned_to = NULL WHERE id = ?`, conv); err != nil {
			return 0, fmt.Errorf("store: unassign: %w", err)
		}
		if err := addActivity(ctx, tx, accountID, conv, domain.ActivityUnassign, 0, 0, ""); err != nil {
			return 0, err
		}
	}
	return int64(len(ids)), nil
}

const userColumns = `id, account_id, role_id, username, password_hash, first_name, last_name, title, email, mobile, company, time_zone, extension, extensions, lines, numbers, voicemails, disabled_at`

func scanUser(sc interface{ Scan(...any) error }) (domain.User, error) {
	var u domain.User
	var role sql.NullInt64
	var username sql.NullString
	var lists [4]string
	var disabled sql.NullInt64
	err := sc.Scan(&u.ID, &u.AccountID, &role, &username, &u.PasswordHash, &u.FirstName, &u.LastName, &u.Title, &u.Email, &u.Mobile, &u.Company,
		&u.TimeZone, &u.Extension, &lists[0], &lists[1], &lists[2], &lists[3], &disabled)
	if err != nil {
		return u, err
	}
	u.RoleID, u.Username, u.Disabled = role.Int64, username.String, disabled.Valid
	for i, dst := range []*[]string{&u.Extensions, &u.Lines, &u.Numbers, &u.Voicemails} {
		if err := json.Unmarshal([]byte(lists[i]), dst); err != nil {
			return u, fmt.Errorf("decode user %d list: %w", u.ID, err)
		}
	}
	return u, nil
}

// User returns the account's user with id.
func (s *Store) User(ctx context.Context, accountID, id int64) (domain.User, error) {
	return sqldb.Cached(ctx, s.db, fmt.Sprintf("user:%d:%d", accountID, id), func() (domain.User, error) { return s.user(ctx, accountID, id) })
}

func (s *Store) user(ctx context.Context, accountID, id int64) (domain.User, error) {
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ? AND id = ? AND deleted_at IS NULL`, accountID, id))
	if err != nil {
		return u, fmt.Errorf("store: user: %w", notFound(err, "user"))
	}
	return u, nil
}

// UserByUsername finds a user by portal username, in any account.
func (s *Store) UserByUsername(ctx context.Context, username string) (domain.User, error) {
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = ? AND deleted_at IS NULL`, username))
	if err != nil {
		return u, fmt.Errorf("store: user: %w", notFound(err, "user"))
	}
	return u, nil
}

// Users lists the account's users by last name, then first name, then id.
// Names compare case-insensitively in Go rather than in SQL so that both
// engines (whose collations differ) give the same order.
// The result is shared: callers must not modify it.
func (s *Store) Users(ctx context.Context, accountID int64) ([]domain.User, error) {
	return sqldb.Cached(ctx, s.db, "users:"+strconv.FormatInt(accountID, 10), func() ([]domain.User, error) { return s.users(ctx, accountID) })
}

func (s *Store) users(ctx context.Context, accountID int64) ([]domain.User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ? AND deleted_at IS NULL ORDER BY id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	defer rows.Close()
	out := []domain.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("store: users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	slices.SortFunc(out, compareUsers)
	return out, nil
}

func compareUsers(a, b domain.User) int {
	return cmp.Or(
		compareName(a.LastName, b.LastName),
		compareName(a.FirstName, b.FirstName),
		cmp.Compare(a.ID, b.ID),
	)
}

func compareName(a, b string) int {
	return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
}

func marshalLists(lists ...[]string) ([]string, error) {
	out := make([]string, len(lists))
	for i, l := range lists {
		if l == nil {
			l = []string{}
		}
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}
