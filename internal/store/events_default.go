//go:build !benchnoevents

package store

// skipEvents: see events_benchnoevents.go.
const skipEvents = false
