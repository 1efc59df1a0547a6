// Package background runs Switchboard's background work: the loops that run
// beside the HTTP server (the SMS reconciler and send settler, pruning of
// expired OAuth data, Idempotency-Key records, hosted media and webhook
// history, the webhook dispatcher and the scheduled-message dispatcher).
//
// Every piece of background work is a [Service]: Start(ctx) begins it and
// returns at once, Stop ends it and waits until it has. The server builds its
// services, hands them to one [Runner], starts the runner after the listener
// is up and stops it after the HTTP server has drained, so no background pass
// outlives the process's store.
//
// Most services are periodic passes over the database, and [Periodic] is that
// loop written once: a pass at start, then one every Interval or whenever
// Wake is called, each with a context that Stop cancels, its error logged and
// never fatal.
//
// A capability offers each piece of its background work one way: a method
// of its service that returns a stopped Service (a *Periodic, or a type of
// its own such as a dispatcher), taking a Config of that work's own knobs
// only (the store, the log and settings shared with requests are the
// service's), whose zero or negative fields take defaults applied there
// once, with cmp.Or:
//
//	func (s *Service) Reconciler(cfg ReconcilerConfig) *background.Periodic
//	func (s *Service) Dispatcher(cfg DispatcherConfig) *Dispatcher
//	func (s *Service) Settler() background.Service // nothing to configure
//
// cmd/switchboard adds each to the runner, which alone starts and stops
// them. Work shared by several
// processes claims its rows with store.Claim inside the pass, so that each
// row is worked on by one process at a time.
//
// Tests never sleep waiting for a pass. A service exposes TestSignals, which
// a test initialises before Start and then waits on:
//
//	p := background.NewPeriodic(background.PeriodicConfig{...})
//	p.TestSignals.Init()
//	p.Start(ctx)
//	defer p.Stop()
//	p.Wake()
//	if err := p.TestSignals.Pass.WaitOrTimeout(t); err != nil { ... }
//
// Signals cost nothing when not initialised, so production code fires them
// unconditionally.
package background
