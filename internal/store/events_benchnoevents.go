//go:build benchnoevents

package store

// skipEvents writes no outbox event at all (addEvent and addEvents return
// at once), so that bench/send-ceiling.sh can measure how fast sends would
// be without their events, their webhook fan-out and the stream's reads of
// them: with -tags benchnolead too, a send without the work the inbox and
// webhooks added to it. Webhooks and streams are silent in such a build:
// never deploy it.
const skipEvents = true
