//go:build benchnolead

package store

// skipLead leaves every conversation where it was when a send is recorded
// sent (no update of its newest message, nor of its users' unread rows), so
// that bench/pg-send.sh can measure how fast sends would be without that
// update: the ceiling for the non-HOT conversation update's cost. The inbox
// is wrong in such a build: never deploy it.
const skipLead = true
