// Package store keeps Switchboard's state in SQLite or PostgreSQL behind one
// set of methods. Both engines run the same SQL wherever they accept it; the
// few differences sit in dialect. Every write goes through Store.write so that
// SQLite can group concurrent writes into shared commits (one fsync for many
// requests) while PostgreSQL runs them as ordinary concurrent transactions.
package store
