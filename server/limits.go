package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/server/mcpserver"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// The per-API concurrency limits (issue 26) on the admin plane: GET /admin/limits shows every
// limit, POST /admin/limits/{profile}/retune swaps its parameters live. A retune is an operator
// action: it lasts until the profile's concurrency block changes on reload, or the restart.

// LimitsAnswer is GET /admin/limits' answer.
type LimitsAnswer struct {
	Limits []broker.LimitState `json:"limits"`
}

func (s *Server) handleLimits(w http.ResponseWriter, r *http.Request) {
	all := s.rt.Limits().State()
	name := r.URL.Query().Get("profile")
	out := []broker.LimitState{}
	for _, l := range all {
		if name == "" || l.Profile == name {
			out = append(out, l)
		}
	}
	writeJSON(w, http.StatusOK, LimitsAnswer{Limits: out})
}

// RetuneRequest is POST /admin/limits/{profile}/retune's body; a field left out keeps its value.
// Limit is "gradient2", "aimd", or a whole number for a fixed limit.
type RetuneRequest struct {
	Limit        *json.RawMessage `json:"limit"`
	Min          *int             `json:"min"`
	Max          *int             `json:"max"`
	MaxQueue     *int             `json:"max_queue"`
	QueueTimeout *string          `json:"queue_timeout"`
}

// apply returns c changed as the request says, or the field that is wrong.
func (q RetuneRequest) apply(c bulkhead.Config) (bulkhead.Config, *bulkhead.ConfigError) {
	if q.Limit != nil {
		var n int
		var alg string
		switch {
		case json.Unmarshal(*q.Limit, &n) == nil:
			c.Algorithm, c.Initial, c.Min, c.Max = bulkhead.Fixed, n, n, n
		case json.Unmarshal(*q.Limit, &alg) == nil && (alg == string(bulkhead.AIMD) || alg == string(bulkhead.Gradient2)):
			if c.Algorithm == bulkhead.Fixed {
				c.Min, c.Max = bulkhead.DefaultMin, bulkhead.DefaultMax
			}
			c.Algorithm = bulkhead.Algorithm(alg)
		default:
			return c, &bulkhead.ConfigError{Field: "limit", Reason: fmt.Sprintf("%s is not \"gradient2\", \"aimd\" or a whole number", *q.Limit)}
		}
	}
	if (q.Min != nil || q.Max != nil) && c.Algorithm == bulkhead.Fixed {
		field := "min"
		if q.Min == nil {
			field = "max"
		}
		return c, &bulkhead.ConfigError{Field: field, Reason: "a fixed limit has no min or max: set limit instead"}
	}
	if q.Min != nil {
		c.Min = *q.Min
	}
	if q.Max != nil {
		c.Max = *q.Max
	}
	if q.MaxQueue != nil {
		c.MaxQueue = *q.MaxQueue
	}
	if q.QueueTimeout != nil {
		d, err := time.ParseDuration(*q.QueueTimeout)
		if err != nil || d <= 0 {
			return c, &bulkhead.ConfigError{Field: "queue_timeout", Reason: fmt.Sprintf("%q is not a positive duration such as 2s", *q.QueueTimeout)}
		}
		c.QueueTimeout = d
	}
	if c.Algorithm != bulkhead.Fixed {
		c.Initial = c.Min // only validated: the live limit carries over (Bulkhead.Retune)
	}
	return c, nil
}

func (s *Server) handleRetune(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("profile")
	var q RetuneRequest
	if err := decodeAdminBody(r, &q, `{"limit": ..., "min": ..., "max": ..., "max_queue": ..., "queue_timeout": ...}`); err != nil {
		refuseErr(w, err)
		return
	}
	var bad *bulkhead.ConfigError
	change := func(c bulkhead.Config) bulkhead.Config {
		next, err := q.apply(c)
		if err != nil {
			if bad == nil {
				bad = err
			}
			return bulkhead.Config{Min: -1} // fails validation: nothing is applied
		}
		return next
	}
	st, err := s.rt.Limits().Retune(name, change, time.Now())
	if bad != nil {
		err = bad
	}
	var ce *bulkhead.ConfigError
	switch {
	case errors.Is(err, broker.ErrNoLimit):
		refuse(w, http.StatusConflict, "profile", err.Error())
		return
	case errors.As(err, &ce):
		refuse(w, http.StatusBadRequest, ce.Field, ce.Reason)
		return
	case err != nil:
		refuse(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	s.log.Warn("concurrency limit retuned by the operator: it lasts until the profile's block changes or the restart",
		"profile", name, "limit", st[0].Limit, "algorithm", st[0].Algorithm, "min", st[0].Min, "max", st[0].Max)
	writeJSON(w, http.StatusOK, LimitsAnswer{Limits: st})
}

// tierOf maps the daemon's admission criticality to the API limit's tier: one header sets both.
func tierOf(c runqueue.Criticality) bulkhead.Tier {
	switch c {
	case runqueue.Critical:
		return bulkhead.Critical
	case runqueue.Sheddable:
		return bulkhead.Sheddable
	}
	return bulkhead.Normal
}

// tierFrom reads the run's tier from the request's Plimsoll-Criticality header (already
// validated by admission).
func tierFrom(header string) bulkhead.Tier {
	c, _ := runqueue.ParseCriticality(header)
	return tierOf(c)
}

// mcpCriticality is an MCP call's criticality: its _meta "plimsoll/criticality" when set, else
// the HTTP request's Plimsoll-Criticality header; the error names which one was wrong.
func mcpCriticality(call mcpserver.Call) (runqueue.Criticality, error) {
	if call.Criticality != "" {
		c, err := runqueue.ParseCriticality(call.Criticality)
		if err != nil {
			return c, fmt.Errorf("_meta %s: %w", mcpserver.MetaCriticality, err)
		}
		return c, nil
	}
	c, err := runqueue.ParseCriticality(call.Header.Get(HeaderCriticality))
	if err != nil {
		return c, fmt.Errorf("header %s: %w", HeaderCriticality, err)
	}
	return c, nil
}

// limitsCollector exports every limit's live numbers.
type limitsCollector struct{ s *Server }

var (
	descAPILimit    = prometheus.NewDesc("plimsoll_api_limit", "The concurrency limit of an API now, by profile and route (\"\" for the whole API).", []string{"profile", "route"}, nil)
	descAPIInFlight = prometheus.NewDesc("plimsoll_api_in_flight", "Calls holding a slot of the API's limit now.", []string{"profile", "route"}, nil)
	descAPIQueued   = prometheus.NewDesc("plimsoll_api_queued", "Calls waiting for a slot of the API's limit now.", []string{"profile", "route"}, nil)
	descAPIBaseline = prometheus.NewDesc("plimsoll_api_latency_baseline_seconds", "The latency the adaptive limit takes as the API's normal.", []string{"profile", "route"}, nil)
	descAPIShed     = prometheus.NewDesc("plimsoll_api_shed_total", "Calls shed by the API's limit, by criticality.", []string{"profile", "route", "criticality"}, nil)
	descAPIAdmitted = prometheus.NewDesc("plimsoll_api_admitted_total", "Calls admitted by the API's limit.", []string{"profile", "route"}, nil)
	descAPILearned  = prometheus.NewDesc("plimsoll_api_limit_learned", "The limit learned from the API's latency (in a fleet: the fleet's limit as this replica learned it).", []string{"profile", "route"}, nil)
	descAPIShare    = prometheus.NewDesc("plimsoll_api_limit_share", "This replica's part of the fleet's limit; 1 alone, without --fleet, or while the fleet is degraded.", []string{"profile", "route"}, nil)
)

func (c limitsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAPILimit, descAPIInFlight, descAPIQueued, descAPIBaseline, descAPIShed, descAPIAdmitted, descAPILearned, descAPIShare} {
		ch <- d
	}
}

func (c limitsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.rt == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, l := range c.s.rt.Limits().State() {
		gauge(descAPILimit, float64(l.Limit), l.Profile, l.Route)
		gauge(descAPIInFlight, float64(l.InFlight), l.Profile, l.Route)
		gauge(descAPIQueued, float64(l.Queued), l.Profile, l.Route)
		gauge(descAPIBaseline, l.BaselineMs/1000, l.Profile, l.Route)
		gauge(descAPILearned, float64(l.Learned), l.Profile, l.Route)
		gauge(descAPIShare, cmp.Or(l.Share, 1), l.Profile, l.Route)
		ch <- prometheus.MustNewConstMetric(descAPIAdmitted, prometheus.CounterValue, float64(l.Admitted), l.Profile, l.Route)
		for _, t := range bulkhead.Tiers {
			ch <- prometheus.MustNewConstMetric(descAPIShed, prometheus.CounterValue, float64(l.Shed[t.String()]), l.Profile, l.Route, t.String())
		}
	}
}
