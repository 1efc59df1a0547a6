package store

import "context"

// CountRows counts table's rows (a table name from the test, never input).
func (s *Store) CountRows(ctx context.Context, table string) (n int) {
	if err := s.db.Readers().QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
		panic(err)
	}
	return n
}
