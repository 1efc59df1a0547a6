package sqldb

import (
	"cmp"
	"maps"
	"slices"
)

// GroupMerge is work on a row that many concurrent writes update (a row
// every write of a kind moves, such as a parent's "newest child"), which the
// Contended writes of a group leave to the group's end: each
// hands a value under a key (the row), values under one key are merged, and
// after the group's last write Flush queues the work for each key, in
// ascending key order, to go with the COMMIT in one pipeline (on SQLite it
// runs just before the COMMIT). The row is then updated once per group
// rather than once per write, and on PostgreSQL locked for the COMMIT's
// flush only; the key order makes groups of other committers and nodes
// lock shared rows in one order.
//
// It is declared once, as a package variable, by the code that owns the
// row; the engine knows nothing of what the keys and values mean. If the
// server refuses a flushed statement, the group is rolled back and run
// again with each write in its savepoint and nothing deferred, so the
// writes then do their work themselves and only the one whose work is
// refused fails.
type GroupMerge[K cmp.Ordered, V any] struct {
	// Merge combines the value already deferred under a key with a newer
	// one. The first value under a key is kept as it is.
	Merge func(old, new V) V
	// Flush queues the work for one key's merged value (Tx.ExecLater); the
	// group has no more writes to run.
	Flush func(tx *Tx, key K, v V) error
}

// Defer hands v under key to the end of tx's group and reports true when
// the running write may defer its work: it is Contended and runs in a
// group without savepoints. Otherwise it reports false, and the
// caller does the work at once, as it would without a group.
func (m *GroupMerge[K, V]) Defer(tx *Tx, key K, v V) bool {
	// Small enough to inline: most writes only test the flag.
	if !tx.deferring {
		return false
	}
	m.put(tx, key, v)
	return true
}

// put merges v under key into tx's group.
func (m *GroupMerge[K, V]) put(tx *Tx, key K, v V) {
	for _, g := range tx.merges {
		if p, ok := g.(*pendingMerge[K, V]); ok && p.m == m {
			if old, found := p.vals[key]; found {
				v = m.Merge(old, v)
			}
			p.vals[key] = v
			return
		}
	}
	tx.merges = append(tx.merges, &pendingMerge[K, V]{m: m, vals: map[K]V{key: v}})
}

// groupMerge is one GroupMerge's work deferred in a group.
type groupMerge interface {
	flush(tx *Tx) error
}

type pendingMerge[K cmp.Ordered, V any] struct {
	m    *GroupMerge[K, V]
	vals map[K]V
}

func (p *pendingMerge[K, V]) flush(tx *Tx) error {
	for _, k := range slices.Sorted(maps.Keys(p.vals)) {
		if err := p.m.Flush(tx, k, p.vals[k]); err != nil {
			return err
		}
	}
	return nil
}

// flushMerges queues the work the group's writes deferred (GroupMerge), in
// the order the merges were first used and each in key order.
func (t *Tx) flushMerges() error {
	t.deferring = false
	merges := t.merges
	t.merges = nil
	for _, g := range merges {
		if err := g.flush(t); err != nil {
			return err
		}
	}
	return nil
}
