//go:build !benchnolead

package store

// skipLead: see lead_benchnolead.go.
const skipLead = false
