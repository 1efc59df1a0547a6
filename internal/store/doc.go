// Package store keeps Switchboard's state in SQLite or PostgreSQL behind one
// set of methods. Both engines run the same SQL wherever they accept it; the
// few differences sit in dialect. Every write goes through Store.write so that
// SQLite can group concurrent writes into shared commits (one fsync for many
// requests) while PostgreSQL runs them as ordinary concurrent transactions.
//
// Background work shared by several processes is claimed row by row with
// Store.Claim and given back with Store.Release: a lease per row, taken with
// FOR UPDATE SKIP LOCKED on PostgreSQL and through the single writer on
// SQLite. ClaimTable documents the columns a claimable table needs and how a
// new one is registered.
package store
