package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/store"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_http_requests_total",
			Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "status"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// registerStoreMetrics exports the SQLite committer's counters: the average
// group size (writes ÷ batches) and the time per commit are what an operator
// tunes disk and load against.
func registerStoreMetrics(reg prometheus.Registerer, st *store.Store) {
	if st == nil {
		return
	}
	counter := func(name, help string, v func(store.CommitStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return v(st.CommitStats()) })
	}
	reg.MustRegister(
		counter("switchboard_store_commits_total", "SQLite group commits.",
			func(c store.CommitStats) float64 { return float64(c.Batches) }),
		counter("switchboard_store_writes_total", "Writes committed in SQLite group commits.",
			func(c store.CommitStats) float64 { return float64(c.Writes) }),
		counter("switchboard_store_exec_seconds_total", "Time the SQLite committer spent running writes.",
			func(c store.CommitStats) float64 { return c.Exec.Seconds() }),
		counter("switchboard_store_commit_seconds_total", "Time the SQLite committer spent in COMMIT (WAL write and fsync).",
			func(c store.CommitStats) float64 { return c.Commit.Seconds() }),
	)
}

// wrap records metrics under the route's pattern (never the raw path, which
// would hold numbers and explode the label set).
func (m *metrics) wrap(pattern string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The access log's writer already records the status; reuse it.
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		next.ServeHTTP(sw, r)
		status := strconv.Itoa(sw.status)
		m.requests.WithLabelValues(pattern, status).Inc()
		m.latency.WithLabelValues(pattern, status).Observe(time.Since(start).Seconds())
	})
}

func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}

func slogStr(k, v string) slog.Attr               { return slog.String(k, v) }
func slogInt(k string, v int) slog.Attr           { return slog.Int(k, v) }
func slogDur(k string, v time.Duration) slog.Attr { return slog.Duration(k, v) }
