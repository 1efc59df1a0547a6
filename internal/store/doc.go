// Package store keeps Switchboard's state in SQLite or PostgreSQL behind one
// set of methods: the entities (accounts, messages, conversations, calls,
// webhooks, OAuth), their migrations and their SQL. Both engines run the
// same SQL wherever they accept it; the few differences are chosen where
// they occur (Store.Engine, Tx.Engine). The engine that runs that SQL is
// package sqldb: every write goes through its one entry point, DB.Write,
// whose options say whether the write drops the read cache, updates a row
// every send updates (Contended) or must commit alone, so that concurrent
// writes share group commits (one fsync, or one PostgreSQL round trip, for
// many requests). The conversation update that sends share is merged at
// the group's end through sqldb.GroupMerge (leads, messages.go).
//
// Background work shared by several processes is claimed row by row with
// Store.Claim and given back with Store.Release: a lease per row, taken with
// FOR UPDATE SKIP LOCKED on PostgreSQL and through the single writer on
// SQLite. ClaimTable documents the columns a claimable table needs and how a
// new one is registered.
package store
