//go:build benchnosync

package sqldb

// Durable reports whether SQLite commits survive power loss.
const Durable = false

// synchronous OFF gives up durability (no fsync at all) so that
// bench/send-bound.sh can measure how fast sends would be if commits cost the
// disk nothing: the ceiling that no grouping of commits can pass. Never
// deploy a binary built with this tag.
const synchronous = "synchronous(OFF)"
