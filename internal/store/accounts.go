package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// CreateAccount adds an account.
func (s *Store) CreateAccount(ctx context.Context, a *domain.Account) error {
	if strings.TrimSpace(a.Name) == "" {
		return domain.Errorf(domain.Invalid, "account name is required")
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		id, err := tx.Insert(ctx, `INSERT INTO accounts (name, restrict_sms_delete, sensitive_reverify, created_at) VALUES (?, ?, ?, ?)`,
			a.Name, a.RestrictSMSDelete, a.SensitiveReverify, tx.Now())
		if err != nil {
			return fmt.Errorf("store: create account: %w", err)
		}
		a.ID, a.CreatedAt = id, fromMicros(tx.Now())
		return nil
	})
}

// Account returns the account with id.
func (s *Store) Account(ctx context.Context, id int64) (domain.Account, error) {
	return sqldb.Cached(ctx, s.db, "account:"+strconv.FormatInt(id, 10), func() (domain.Account, error) { return s.account(ctx, id) })
}

func (s *Store) account(ctx context.Context, id int64) (domain.Account, error) {
	var a domain.Account
	var created int64
	err := s.db.QueryRow(ctx, `SELECT id, name, restrict_sms_delete, sensitive_reverify, created_at FROM accounts WHERE id = ?`, id).
		Scan(&a.ID, &a.Name, &a.RestrictSMSDelete, &a.SensitiveReverify, &created)
	if err != nil {
		return a, fmt.Errorf("store: account: %w", notFound(err, "account"))
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}

// Accounts lists every account, oldest first.
func (s *Store) Accounts(ctx context.Context) ([]domain.Account, error) {
	rows, err := s.db.Query(ctx, `SELECT id, name, restrict_sms_delete, sensitive_reverify, created_at FROM accounts ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: accounts: %w", err)
	}
	defer rows.Close()
	var out []domain.Account
	for rows.Next() {
		var a domain.Account
		var created int64
		if err := rows.Scan(&a.ID, &a.Name, &a.RestrictSMSDelete, &a.SensitiveReverify, &created); err != nil {
			return nil, fmt.Errorf("store: accounts: %w", err)
		}
		a.CreatedAt = fromMicros(created)
		out = append(out, a)
	}
	return out, rows.Err()
}

// UpdateAccountSettings stores the account's settings.
func (s *Store) UpdateAccountSettings(ctx context.Context, a domain.Account) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE accounts SET restrict_sms_delete = ?, sensitive_reverify = ? WHERE id = ?`,
			a.RestrictSMSDelete, a.SensitiveReverify, a.ID)
		if err != nil {
			return fmt.Errorf("store: update account: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "account not found")
		}
		return nil
	})
}

// CreateRole adds a role to an account. Role names are unique within the account.
func (s *Store) CreateRole(ctx context.Context, r *domain.Role) error {
	if strings.TrimSpace(r.Name) == "" {
		return domain.Errorf(domain.Invalid, "role name is required")
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, r.AccountID); err != nil {
			return err
		}
		p := r.Permissions
		id, err := tx.Insert(ctx, `INSERT INTO roles (account_id, name, users_visibility, numbers_access, call_reports, allow_recordings, webhooks) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.AccountID, r.Name, string(p.Users), string(p.Numbers), p.CallReports, p.AllowRecordings, p.Webhooks)
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "role %q already exists in account %d", r.Name, r.AccountID)
		}
		if err != nil {
			return fmt.Errorf("store: create role: %w", err)
		}
		r.ID = id
		return nil
	})
}

// SetRolePermissions replaces the permissions of the account's role called
// name and returns the role. A person's role is read on every request, so
// their tokens follow the change at once.
func (s *Store) SetRolePermissions(ctx context.Context, accountID int64, name string, p domain.Permissions) (domain.Role, error) {
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE roles SET users_visibility = ?, numbers_access = ?, call_reports = ?, allow_recordings = ?, webhooks = ? WHERE account_id = ? AND name = ?`,
			string(p.Users), string(p.Numbers), p.CallReports, p.AllowRecordings, p.Webhooks, accountID, name)
		if err != nil {
			return fmt.Errorf("store: set role permissions: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "role %q not found in account %d", name, accountID)
		}
		return nil
	})
	if err != nil {
		return domain.Role{}, err
	}
	return s.RoleByName(ctx, accountID, name)
}

const roleColumns = `id, account_id, name, users_visibility, numbers_access, call_reports, allow_recordings, webhooks`

func scanRole(sc interface{ Scan(...any) error }) (domain.Role, error) {
	var r domain.Role
	var users, numbers string
	err := sc.Scan(&r.ID, &r.AccountID, &r.Name, &users, &numbers, &r.Permissions.CallReports, &r.Permissions.AllowRecordings, &r.Permissions.Webhooks)
	r.Permissions.Users, r.Permissions.Numbers = domain.UserVisibility(users), domain.NumberAccess(numbers)
	return r, err
}

// Role returns the account's role with id.
func (s *Store) Role(ctx context.Context, accountID, id int64) (domain.Role, error) {
	return sqldb.Cached(ctx, s.db, fmt.Sprintf("role:%d:%d", accountID, id), func() (domain.Role, error) { return s.role(ctx, accountID, id) })
}

func (s *Store) role(ctx context.Context, accountID, id int64) (domain.Role, error) {
	r, err := scanRole(s.db.QueryRow(ctx, `SELECT `+roleColumns+` FROM roles WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return r, fmt.Errorf("store: role: %w", notFound(err, "role"))
	}
	return r, nil
}

// RoleByName returns the account's role called name.
func (s *Store) RoleByName(ctx context.Context, accountID int64, name string) (domain.Role, error) {
	r, err := scanRole(s.db.QueryRow(ctx, `SELECT `+roleColumns+` FROM roles WHERE account_id = ? AND name = ?`, accountID, name))
	if err != nil {
		return r, fmt.Errorf("store: role: %w", notFound(err, "role"))
	}
	return r, nil
}

// Roles lists the account's roles by name.
func (s *Store) Roles(ctx context.Context, accountID int64) ([]domain.Role, error) {
	rows, err := s.db.Query(ctx, `SELECT `+roleColumns+` FROM roles WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: roles: %w", err)
	}
	defer rows.Close()
	var out []domain.Role
	for rows.Next() {
		r, err := scanRole(rows)
		if err != nil {
			return nil, fmt.Errorf("store: roles: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func accountExists(ctx context.Context, tx *Tx, id int64) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM accounts WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("store: find account: %w", err)
	}
	if n == 0 {
		return domain.Errorf(domain.NotFound, "account %d not found", id)
	}
	return nil
}
