//go:build !benchnosync

package sqldb

// Durable reports whether SQLite commits survive power loss.
const Durable = true

// synchronous is SQLite's durability setting: FULL makes every commit wait
// for its fsync, so an acknowledged write survives power loss. No flag or
// setting changes it; only a build with the benchnosync tag does (see
// synchronous_benchnosync.go), to measure what durability costs.
const synchronous = "synchronous(FULL)"
