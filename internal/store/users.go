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
		var role any
		if u.RoleID != 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM roles WHERE id = ? AND account_id = ?`, u.RoleID, u.AccountID).Scan(&n); err != nil {
				return fmt.Errorf("store: find role: %w", err)
			}
			if n == 0 {
				return domain.Errorf(domain.NotFound, "role %d not found in account %d", u.RoleID, u.AccountID)
			}
			role = u.RoleID
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

const userColumns = `id, account_id, role_id, username, password_hash, first_name, last_name, title, email, mobile, company, time_zone, extension, extensions, lines, numbers, voicemails`

func scanUser(sc interface{ Scan(...any) error }) (domain.User, error) {
	var u domain.User
	var role sql.NullInt64
	var username sql.NullString
	var lists [4]string
	err := sc.Scan(&u.ID, &u.AccountID, &role, &username, &u.PasswordHash, &u.FirstName, &u.LastName, &u.Title, &u.Email, &u.Mobile, &u.Company,
		&u.TimeZone, &u.Extension, &lists[0], &lists[1], &lists[2], &lists[3])
	if err != nil {
		return u, err
	}
	u.RoleID, u.Username = role.Int64, username.String
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
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return u, fmt.Errorf("store: user: %w", notFound(err, "user"))
	}
	return u, nil
}

// UserByUsername finds a user by portal username, in any account.
func (s *Store) UserByUsername(ctx context.Context, username string) (domain.User, error) {
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = ?`, username))
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
	rows, err := s.db.Query(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ?`, accountID)
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
