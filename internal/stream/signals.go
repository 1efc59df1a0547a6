package stream

import "switchboard/internal/background"

// HubSignals are the test signals of a Hub (river's TestSignals shape, as
// the dispatchers have): tests wait on them instead of sleeping.
type HubSignals struct {
	// Pass fires after every pass over the outbox with its error.
	Pass background.Signal[error]
	// Recheck fires after every round of the credentials' rechecks, with
	// how many rechecks it made.
	Recheck background.Signal[int]
	// Sweep fires after every sweep of the direct streams, with how many
	// keepalive comments it wrote.
	Sweep background.Signal[int]
	// ReplayStarted fires when a resumed stream takes one of its account's
	// replay slots, with the account.
	ReplayStarted background.Signal[int64]
	// Closed fires when a stream's place in the limit is freed, with its
	// account.
	Closed background.Signal[int64]
}

// Init switches every signal on; call it before Start.
func (s *HubSignals) Init() {
	s.Pass.Init()
	s.Recheck.Init()
	s.Sweep.Init()
	s.ReplayStarted.Init()
	s.Closed.Init()
}
