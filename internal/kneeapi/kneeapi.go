// Package kneeapi is a scripted loopback upstream with a knee, for the API limit's load program
// and demo (issue 26): it serves Knee calls at once in Base each, and above that every call takes
// Base × in-flight/Knee, so its throughput never exceeds Knee/Base while its latency grows. It
// records the in-flight each call found and when each call ended.
package kneeapi

import (
	"net/http"
	"slices"
	"sync"
	"time"
)

// API is the upstream; serve it with net/http on 127.0.0.1.
type API struct {
	Knee int
	Base time.Duration

	mu       sync.Mutex
	start    time.Time
	inflight int
	arrivals []Arrival
	ends     []time.Duration
}

// Arrival is one call as it reached the API.
type Arrival struct {
	At       time.Duration // since New
	InFlight int           // itself included
}

// New returns an API with a knee of knee calls and a base latency of base.
func New(knee int, base time.Duration) *API {
	return &API{Knee: knee, Base: base, start: time.Now()}
}

// ServeHTTP answers every request 200 after its latency.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.inflight++
	n := a.inflight
	a.arrivals = append(a.arrivals, Arrival{At: time.Since(a.start), InFlight: n})
	a.mu.Unlock()
	lat := time.Duration(float64(a.Base) * max(1, float64(n)/float64(a.Knee)))
	t := time.NewTimer(lat)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	a.mu.Lock()
	a.inflight--
	a.ends = append(a.ends, time.Since(a.start))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"ok":true}`))
}

// Since is the time since New, on the API's clock.
func (a *API) Since() time.Duration { return time.Since(a.start) }

// InFlight is the calls at the API now.
func (a *API) InFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inflight
}

// Stats summarise the calls that arrived in [From, To).
type Stats struct {
	From, To      time.Duration
	Calls         int     // arrivals in the window
	InFlightP50   int     // in-flight found by arrivals
	InFlightP99   int     //
	InFlightMax   int     //
	Goodput       float64 // answers per second in the window over the API's capacity Knee/Base
	AnswersPerSec float64
}

// Window summarises [from, to).
func (a *API) Window(from, to time.Duration) Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{From: from, To: to}
	var seen []int
	for _, ar := range a.arrivals {
		if ar.At >= from && ar.At < to {
			seen = append(seen, ar.InFlight)
		}
	}
	s.Calls = len(seen)
	if len(seen) > 0 {
		slices.Sort(seen)
		s.InFlightP50 = seen[len(seen)/2]
		s.InFlightP99 = seen[min(len(seen)-1, len(seen)*99/100)]
		s.InFlightMax = seen[len(seen)-1]
	}
	ended := 0
	for _, e := range a.ends {
		if e >= from && e < to {
			ended++
		}
	}
	if secs := (to - from).Seconds(); secs > 0 {
		s.AnswersPerSec = float64(ended) / secs
		s.Goodput = s.AnswersPerSec / (float64(a.Knee) / a.Base.Seconds())
	}
	return s
}
