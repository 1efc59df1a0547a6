// Package domain holds the types every layer of Switchboard shares: the one
// error type with its stable codes, and the account's entities (accounts,
// roles, users, lines, API keys).
package domain
