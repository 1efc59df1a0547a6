package stream

import (
	"time"

	"switchboard/internal/background"
)

// HubSignals are the test signals of a Hub (river's TestSignals shape, as
// the dispatchers have): tests wait on them instead of sleeping.
type HubSignals struct {
	// Pass fires after every pass over the outbox.
	Pass background.Signal[Round]
	// Recheck fires after every round of the credentials' rechecks, with
	// how many rechecks it made.
	Recheck background.Signal[Round]
	// Sweep fires after every sweep of the direct streams, with how many
	// keepalive comments it wrote.
	Sweep background.Signal[Round]
	// ReplayStarted fires when a resumed stream takes one of its account's
	// replay slots, with the account.
	ReplayStarted background.Signal[int64]
	// Closed fires when a stream's place in the limit is freed, with its
	// account.
	Closed background.Signal[int64]
}

// Round is one round of a hub's loops as its signal reports it: a test
// waits for one that began after what it did (WaitRound), whatever rounds
// the signal holds from before.
type Round struct {
	Began time.Time // on the hub's clock (Config.Now)
	N     int       // rechecks made, keepalives written
	Err   error     // a pass's error
}

// Init switches every signal on; call it before Start.
func (s *HubSignals) Init() {
	s.Pass.Init()
	s.Recheck.Init()
	s.Sweep.Init()
	s.ReplayStarted.Init()
	s.Closed.Init()
}

// WaitRound returns the first round of sig that began after t, failing tb
// if none comes within background.SignalTimeout of each.
func WaitRound(tb background.TB, sig *background.Signal[Round], t time.Time) Round {
	tb.Helper()
	for {
		if r := sig.WaitOrTimeout(tb); r.Began.After(t) {
			return r
		}
	}
}
