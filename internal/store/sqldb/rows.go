package sqldb

import (
	"context"
	"strings"
	"sync"
)

// GroupInsert is an INSERT of one row that many writes of a group make (an
// outbox row per send). On SQLite, the writes of a group without
// savepoints hand their rows to the group instead, and after the group's
// last write (before its deferred GroupMerge work and COMMIT) the rows go
// in as multi-row INSERTs, in the order the writes gave them: the
// statement's own cost (binding, running the program, an AUTOINCREMENT
// table's counter) is paid per chunk instead of per row, a third of an
// outbox row's cost. A write must not read back what it inserts this way
// (an outbox nobody reads in the write that fills it). On PostgreSQL, and
// in a group run again with savepoints, each row is inserted at once
// (Tx.ExecLater). If a chunk is refused, the group is rolled back and run
// again with savepoints, each write inserting its own rows.
//
// It is declared once, as a package variable.
type GroupInsert struct {
	// Into is the statement up to VALUES ("INSERT INTO t (a, b) VALUES "),
	// Row one row's placeholders ("(?, ?)"), Cols their number.
	Into, Row string
	Cols      int

	once  sync.Once
	chunk map[int]string // rows → statement, for the chunk sizes
}

// groupInsertChunks are the multi-row statements' sizes: a group's rows go
// in the largest chunks that fit, so that a handful of statements is
// prepared per GroupInsert whatever the group's size.
var groupInsertChunks = []int{64, 16, 4, 1}

func (g *GroupInsert) statements() map[int]string {
	g.once.Do(func() {
		g.chunk = map[int]string{}
		for _, n := range groupInsertChunks {
			g.chunk[n] = g.Into + g.Row + strings.Repeat(", "+g.Row, n-1)
		}
	})
	return g.chunk
}

// Exec inserts one row (len(args) == Cols), now or with the group's rows.
func (g *GroupInsert) Exec(ctx context.Context, tx *Tx, args ...any) error {
	if !tx.batching {
		return tx.ExecLater(ctx, g.Into+g.Row, args...)
	}
	for _, p := range tx.rows {
		if p.g == g {
			p.args = append(p.args, args...)
			return nil
		}
	}
	tx.rows = append(tx.rows, &pendingRows{g: g, args: append(make([]any, 0, 16*len(args)), args...)})
	return nil
}

// pendingRows is one GroupInsert's rows handed to a group.
type pendingRows struct {
	g    *GroupInsert
	args []any
}

// flushRows inserts the rows the group's writes handed it (GroupInsert).
func (t *Tx) flushRows() error {
	t.batching = false
	rows := t.rows
	t.rows = nil
	for _, p := range rows {
		stmts := p.g.statements()
		args := p.args
		for len(args) > 0 {
			n := len(args) / p.g.Cols
			for _, c := range groupInsertChunks {
				if c <= n {
					n = c
					break
				}
			}
			if _, err := t.Exec(groupCtx, stmts[n], args[:n*p.g.Cols]...); err != nil {
				return err
			}
			args = args[n*p.g.Cols:]
		}
	}
	return nil
}
