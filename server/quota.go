package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plimsoll/plimsoll/server/fleet"
	"github.com/plimsoll/plimsoll/server/quota"
)

// Client quotas (issue 27): runs_per_minute and calls_per_minute in the clients file. A run over
// its client's runs quota is refused before it starts (refusal.go: counted, not audited); a call
// over the calls quota is answered by the broker as over_budget (429) and is on the run's trace
// and audit line. With --fleet the counts are shared through the fleet's quotas bucket.

const refusedQuota = "quota" // the refusal reason label

// DefaultQuotaSync is how often a fleet replica republishes its quota counts besides at each change.
const DefaultQuotaSync = 250 * time.Millisecond

// quotas is the daemon's quota state: the counter and, with --fleet, its sync with the bucket.
type quotas struct {
	counter  *quota.Counter
	refusals *prometheus.CounterVec
	stop     context.CancelFunc // ends the fleet sync; nil without one
	changed  chan struct{}      // a count changed: publish it; nil without a fleet
	syncing  sync.WaitGroup
	mu       sync.Mutex
	share    int           // > 1 while the fleet is unreachable
	fleet    *fleet.Quotas // reservations; nil without a fleet
	live     int           // live replicas last seen: the split while unreachable, the lease size
}

func newQuotas(now func() time.Time, reg *prometheus.Registry) *quotas {
	q := &quotas{counter: quota.New(now), share: 1, refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plimsoll_client_quota_refusals_total",
		Help: "Runs and calls refused because their client's quota for the minute was spent, by client and kind (runs or calls).",
	}, []string{"client", "kind"})}
	reg.MustRegister(q.refusals)
	return q
}

// takeRun counts one run of c; a *quota.Refusal when c's runs quota is spent. giveBack returns
// the run's unit when it is refused before it starts (busy, its client gone while it queued, the
// journal failing): a run that never ran does not count against the client.
func (s *Server) takeRun(c *Client) (giveBack func(), err error) {
	u, err := s.quotas.take(c.Name, quota.Runs, c.RunsPerMinute)
	return func() { s.quotas.give(u) }, err
}

// callsQuota is the run's broker.Config.Quota for c's calls quota; nil when c has none.
func (s *Server) callsQuota(c *Client) func() error {
	if c == nil || c.CallsPerMinute == 0 {
		return nil
	}
	return func() error {
		_, err := s.quotas.take(c.Name, quota.Calls, c.CallsPerMinute)
		return err
	}
}

func (q *quotas) take(client string, kind quota.Kind, limit int) (quota.Unit, error) {
	u, err := q.counter.TakeUnit(client, kind, limit)
	if errors.Is(err, quota.ErrNoLease) {
		u, err = q.lease(client, kind, limit)
	}
	switch {
	case err != nil:
		q.refusals.WithLabelValues(client, string(kind)).Inc()
	case limit > 0:
		q.publishSoon()
	}
	return u, err
}

// give returns an unused unit (quota.Counter.Give) and publishes the lower count soon.
func (q *quotas) give(u quota.Unit) {
	q.counter.Give(u)
	q.publishSoon()
}

// publishSoon asks the fleet link to publish this replica's counts; one signal pending is enough.
func (q *quotas) publishSoon() {
	if q.changed == nil {
		return
	}
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

// reserveWait bounds one reservation's round trips: past it the fleet counts as unreachable for
// this take, which falls back to the split quota (SetShare) rather than waiting on NATS.
const reserveWait = time.Second

// lease reserves units of client's kind from the fleet (fleet.Quotas.Reserve), hands them to the
// counter and takes again. A failed reservation splits the quota among the live replicas, as
// when the fleet is unreachable, so the take is still decided on this replica alone.
func (q *quotas) lease(client string, kind quota.Kind, limit int) (quota.Unit, error) {
	q.mu.Lock()
	fq, live := q.fleet, q.live
	q.mu.Unlock()
	if fq == nil {
		return q.counter.TakeUnit(client, kind, limit) // leasing ended meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), reserveWait)
	defer cancel()
	for range 2 { // a second round only when the window turned between reserving and taking
		start := q.counter.WindowStart()
		n, err := fq.Reserve(ctx, start, client, string(kind), leaseSize(limit, live), limit)
		if errors.Is(err, fleet.ErrReserveContended) {
			return quota.Unit{}, contended{client, kind} // NATS answers: refuse rather than admit unreserved
		}
		if err != nil {
			q.unreachable(live)
			return q.counter.TakeUnit(client, kind, limit)
		}
		q.counter.Grant(start, quota.Key{Client: client, Kind: kind}, n)
		if u, err := q.counter.TakeUnit(client, kind, limit); !errors.Is(err, quota.ErrNoLease) {
			return u, err
		}
	}
	q.unreachable(live) // not reached unless the clock jumps windows twice: decide alone
	return q.counter.TakeUnit(client, kind, limit)
}

// contended refuses a take whose reservation kept losing to other replicas' for reserveWait.
type contended struct {
	client string
	kind   quota.Kind
}

func (c contended) Error() string {
	return fmt.Sprintf("client %s's %s quota could not be reserved from the fleet within %v: other replicas were reserving at the same moment; retry in 1s",
		c.client, c.kind.Field(), reserveWait)
}

func (contended) RetryAfter() int { return 1 }

// leaseSize is how many units a replica reserves at once: a quarter of an equal share, at least
// one, so a replica asks the fleet about once per quarter of its share and leaves at most a
// quarter of the quota unused when the window ends.
func leaseSize(limit, live int) int { return max(1, limit/(4*max(1, live))) }

// quotaBody is the 429 answer to a run over its client's quota.
type quotaBody struct {
	errorBody
	Quota quotaNamed `json:"quota"`
}

// quotaNamed names the spent quota and its window.
type quotaNamed struct {
	Client      string    `json:"client"`
	Field       string    `json:"field"` // runs_per_minute or calls_per_minute
	Limit       int       `json:"limit"`
	Used        int       `json:"used"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	Share       int       `json:"fleet_share,omitempty"` // > 1: the fleet was unreachable and the quota split
}

// refuseQuota answers a run refused by its client's quota: 429, Retry-After to the window's end.
func refuseQuota(w http.ResponseWriter, err error) {
	var r *quota.Refusal
	if !errors.As(err, &r) {
		var ra interface{ RetryAfter() int }
		if errors.As(err, &ra) {
			w.Header().Set("Retry-After", strconv.Itoa(ra.RetryAfter()))
		}
		refuse(w, http.StatusTooManyRequests, "", err.Error())
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(r.RetryAfter()))
	share := 0
	if r.Share > 1 {
		share = r.Share
	}
	writeJSON(w, http.StatusTooManyRequests, quotaBody{
		errorBody: errorBody{Error: r.Error(), Status: http.StatusTooManyRequests},
		Quota: quotaNamed{Client: r.Client, Field: r.Kind.Field(), Limit: r.Limit, Used: r.Used,
			WindowStart: r.Start.UTC(), WindowEnd: r.End.UTC(), Share: share},
	})
}

// ClientQuota is one client's quotas and their use in the current window, in GET /admin/state.
type ClientQuota struct {
	Client         string `json:"client"`
	RunsPerMinute  int    `json:"runs_per_minute,omitempty"`
	CallsPerMinute int    `json:"calls_per_minute,omitempty"`
	// Usage is the window's counts: this replica's (local) and the fleet's others' (others).
	Usage []quota.Usage `json:"usage"`
}

// QuotaState is the quota part of GET /admin/state: every client with a quota.
type QuotaState struct {
	WindowEnd time.Time `json:"window_end"`
	// FleetShare > 1 says the fleet is unreachable: each quota is split among the last known
	// live replicas, each admitting its share alone.
	FleetShare int           `json:"fleet_share,omitempty"`
	Clients    []ClientQuota `json:"clients"`
}

func (s *Server) quotaState() *QuotaState {
	if s.clients == nil {
		return nil
	}
	usage := map[string][]quota.Usage{}
	var end time.Time
	for _, u := range s.quotas.counter.Usage() {
		usage[u.Client] = append(usage[u.Client], u)
	}
	start, _ := s.quotas.counter.Local()
	end = start.Add(quota.Window)
	st := &QuotaState{WindowEnd: end.UTC(), Clients: []ClientQuota{}}
	if share := s.quotas.fleetShare(); share > 1 {
		st.FleetShare = share
	}
	for _, c := range s.clients.all() {
		if c.RunsPerMinute == 0 && c.CallsPerMinute == 0 {
			continue
		}
		u := usage[c.Name]
		if u == nil {
			u = []quota.Usage{}
		}
		st.Clients = append(st.Clients, ClientQuota{Client: c.Name, RunsPerMinute: c.RunsPerMinute, CallsPerMinute: c.CallsPerMinute, Usage: u})
	}
	if len(st.Clients) == 0 {
		return nil
	}
	return st
}

func (q *quotas) fleetShare() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.share
}

// shareQuotas starts publishing this replica's counts to the fleet's quotas bucket: at once when
// a count changes (one publication in flight at a time) and every cfg.QuotaSync besides. The
// others' counts come from the bucket's watch. While NATS is unreachable each quota is split
// among the live replicas last seen (quota.Counter.SetShare): the fleet stays within its quotas,
// give or take a rounding, rather than each replica admitting the whole quota.
func (s *Server) shareQuotas(ctx context.Context, f *fleet.Fleet) error {
	fq, err := f.Quotas(ctx)
	if err != nil {
		return err
	}
	every := s.cfg.QuotaSync
	if every <= 0 {
		every = DefaultQuotaSync
	}
	q := s.quotas
	q.mu.Lock()
	q.fleet, q.live = fq, f.Live()
	q.mu.Unlock()
	q.counter.SetLeasing(true)
	q.changed = make(chan struct{}, 1)
	ctx, q.stop = context.WithCancel(context.Background())
	q.syncing.Add(1)
	go func() {
		defer q.syncing.Done()
		defer fq.Stop()
		tick := time.NewTicker(every)
		defer tick.Stop()
		live := f.Live()
		for {
			live = q.sync(ctx, f, fq, live)
			select {
			case <-tick.C:
			case <-q.changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

// sync is one round: publish this replica's counts, hand in the others'. It returns the live
// replicas to split among if a later round finds NATS unreachable.
func (q *quotas) sync(ctx context.Context, f *fleet.Fleet, fq *fleet.Quotas, live int) int {
	start, local := q.counter.Local()
	own := make([]fleet.Count, 0, len(local))
	for k, n := range local {
		own = append(own, fleet.Count{Client: k.Client, Kind: string(k.Kind), N: n})
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := fq.Publish(ctx, start, own); err != nil || f.Degraded() != "" {
		q.unreachable(live)
		return live
	}
	counts := map[quota.Key]int{}
	for _, c := range fq.Others(start) {
		counts[quota.Key{Client: c.Client, Kind: quota.Kind(c.Kind)}] = c.N
	}
	q.counter.SetOthers(start, counts)
	q.setShare(1)
	q.counter.SetLeasing(true)
	live = f.Live()
	q.mu.Lock()
	q.live = live
	q.mu.Unlock()
	return live
}

// unreachable stops leasing and splits each quota among the live replicas last seen, until a
// sync round reaches the fleet again.
func (q *quotas) unreachable(live int) {
	q.counter.SetLeasing(false)
	q.setShare(live)
}

func (q *quotas) setShare(n int) {
	q.mu.Lock()
	q.share = max(1, n)
	q.mu.Unlock()
	q.counter.SetShare(n)
}

// stopSharing ends the fleet sync; leaveFleet calls it before the fleet closes.
func (q *quotas) stopSharing() {
	if q.stop != nil {
		q.stop()
		q.syncing.Wait()
	}
	q.mu.Lock()
	q.fleet = nil
	q.mu.Unlock()
	q.counter.SetLeasing(false) // after the sync loop, which could turn it on again
}
