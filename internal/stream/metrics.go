package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the event stream's Prometheus metrics.
type Metrics struct {
	open   prometheus.Gauge
	sent   prometheus.Counter
	slow   prometheus.Counter
	lagged prometheus.Counter
	replay prometheus.Histogram
	fanout prometheus.Histogram
}

// NewMetrics registers the metrics with reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_event_streams_open",
			Help: "Event streams (GET /events) open on this node, replaying or live.",
		}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_event_stream_events_sent_total",
			Help: "Events written to event streams, replayed or live.",
		}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_event_stream_slow_drops_total",
			Help: "Event streams ended because the client stopped reading: its buffer was full behind a write blocked for a second, or a write stalled for the write timeout.",
		}),
		lagged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_event_stream_catchups_total",
			Help: "Times a stream's buffer filled while its client was still reading (a burst): it read what it missed from the database instead.",
		}),
		replay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchboard_event_stream_replay_events",
			Help:    "Events replayed to a stream that resumed with Last-Event-ID before it joined the live events.",
			Buckets: []float64{0, 1, 10, 100, 1000, 10000, 100000, 1000000},
		}),
		fanout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchboard_event_stream_fanout_seconds",
			Help:    "From the moment an event's transaction wrote it to the end of the hub's pass that handed it out: written to every live stream that takes it directly, queued for the others. One observation per pass, for its oldest event: the server's own part of an event's latency, whatever the clients do.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.sent, m.slow, m.lagged, m.replay, m.fanout)
	}
	return m
}

// Sent counts n events written to a stream.
func (m *Metrics) Sent(n int) { m.sent.Add(float64(n)) }

// SlowWrite counts a stream ended because a write to its client stalled.
func (m *Metrics) SlowWrite() { m.slow.Inc() }

// FannedOut observes how long after its commit a pass's oldest event had
// been handed to every live stream.
func (m *Metrics) FannedOut(d time.Duration) { m.fanout.Observe(d.Seconds()) }

// Replayed observes a resumed stream's replay of n events.
func (m *Metrics) Replayed(n int) { m.replay.Observe(float64(n)) }
