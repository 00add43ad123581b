package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// metrics are the daemon's Prometheus series. Labels are profile names (from the profile
// directory), route patterns, outcomes, statuses and criticalities: bounded sets, never a raw
// path, run id or client-supplied string. The series that name profiles or routes are in reg,
// served on the admin listener only (behind its token when it has one); public holds the rest,
// served on both: a stranger on the API listener learns no profile name from /metrics.
type metrics struct {
	reg         *prometheus.Registry // per-profile series (and planeCollector's)
	public      *prometheus.Registry
	runs        *prometheus.CounterVec
	hostCalls   *prometheus.CounterVec
	probes      *prometheus.CounterVec
	opens       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	queueWait   *prometheus.HistogramVec
	sheds       *prometheus.CounterVec
	requests    *prometheus.CounterVec
	interrupted prometheus.Counter

	recoverySkipped *prometheus.CounterVec // recoverread.go
	refusals        *prometheus.CounterVec // refusal.go
}

func newMetrics(adm *runqueue.Controller, ready func() bool) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), public: prometheus.NewRegistry()}
	m.runs = m.counter("plimsoll_runs_total", "Runs finished, by profile and audit status.", "profile", "status")
	m.hostCalls = m.counter("plimsoll_host_calls_total", "Guest calls to the broker, by profile, route pattern and outcome.", "profile", "route", "outcome")
	m.probes = m.counter("plimsoll_probes_total", "Health-check probes, by profile and result (ok or not_ready).", "profile", "result")
	m.opens = m.counter("plimsoll_breaker_opens_total", "Times a run's circuit breaker opened, by profile.", "profile")
	m.sheds = m.counter("plimsoll_daemon_sheds_total", "Runs the daemon shed with 429, by criticality and reason (queue_full or displaced).", "criticality", "reason")
	m.requests = m.counter("plimsoll_http_requests_total", "HTTP requests answered, by route pattern and status code.", "route", "code")
	m.recoverySkipped = m.counter("plimsoll_recovery_skipped_lines_total", "Audit file and journal lines crash recovery could not read whole at start, by reason (oversize or corrupt).", "reason")
	m.refusals = m.counter("plimsoll_refusals_total", "Runs refused before they started (each with its audit line), by surface (v1 or mcp) and reason.", "surface", "reason")
	m.interrupted = prometheus.NewCounter(prometheus.CounterOpts{Name: "plimsoll_runs_interrupted_total", Help: "Journaled runs found without an audit line at start and audited as interrupted."})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plimsoll_run_duration_seconds",
		Help: "Run duration from admission to audit line, by profile.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"profile"})
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plimsoll_queue_wait_seconds",
		Help: "Time a run waited for a slot, by criticality.", Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)}, []string{"criticality"})
	m.reg.MustRegister(m.runs, m.hostCalls, m.probes, m.opens, m.duration)
	m.public.MustRegister(m.recoverySkipped, m.refusals, m.sheds, m.requests, m.interrupted, m.queueWait,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plimsoll_runs_live", Help: "Runs executing now."},
			func() float64 { return float64(adm.Stats().Live) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plimsoll_queue_depth", Help: "Runs waiting for a slot."},
			func() float64 { return float64(adm.Stats().Waiting) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plimsoll_ready", Help: "1 when the daemon is ready for runs."},
			func() float64 { return b2f(ready()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// observeRun counts a finished run from its audit line and trace.
func (m *metrics) observeRun(a broker.Audit, trace []broker.TraceEntry, seconds float64) {
	m.runs.WithLabelValues(a.Profile, string(a.Status)).Inc()
	m.duration.WithLabelValues(a.Profile).Observe(seconds)
	for _, e := range trace {
		route := e.Route
		if route == "" {
			route = "none" // denied or invalid calls match no route; their path is not a label
		}
		m.hostCalls.WithLabelValues(a.Profile, route, string(e.Outcome)).Inc()
	}
	if a.Probes > 0 {
		m.probes.WithLabelValues(a.Profile, broker.ProbeOK).Add(float64(a.ProbesOK))
		m.probes.WithLabelValues(a.Profile, broker.ProbeNotReady).Add(float64(a.Probes - a.ProbesOK))
	}
	if a.BreakerOpens > 0 {
		m.opens.WithLabelValues(a.Profile).Add(float64(a.BreakerOpens))
	}
}

func (m *metrics) shed(err *runqueue.ShedError) {
	reason := "queue_full"
	if err.Displaced {
		reason = "displaced"
	}
	m.sheds.WithLabelValues(err.Criticality.String(), reason).Inc()
}

func (m *metrics) request(pattern string, code int) {
	if pattern == "" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, strconv.Itoa(code)).Inc()
}

// gatherer is what a listener's /metrics serves: the admin listener all series, the API
// listener the public ones.
func (m *metrics) gatherer(admin bool) prometheus.Gatherer {
	if admin {
		return prometheus.Gatherers{m.public, m.reg}
	}
	return m.public
}
