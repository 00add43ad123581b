package bulkhead

import "time"

// Snapshot is a bulkhead's live numbers, for an operator and for metrics.
type Snapshot struct {
	Algorithm    Algorithm         `json:"algorithm"`
	Limit        int               `json:"limit"`                 // admitted at once now: Learned, or this replica's share
	Learned      int               `json:"learned"`               // the limit learned from the latency (the fleet's, when shared)
	FleetLimit   int               `json:"fleet_limit,omitempty"` // the limit the fleet agreed on, when shared
	Share        float64           `json:"share,omitempty"`       // this replica's part of it, when shared
	Min          int               `json:"min"`
	Max          int               `json:"max"`
	InFlight     int               `json:"in_flight"`
	Queued       int               `json:"queued"`
	MaxQueue     int               `json:"max_queue"`
	QueueTimeout string            `json:"queue_timeout"`
	Admitted     uint64            `json:"admitted"`
	Shed         map[string]uint64 `json:"shed"` // by tier name
	BaselineMs   float64           `json:"baseline_ms"`
}

// Snapshot returns the bulkhead's numbers now.
func (b *Bulkhead) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{Algorithm: b.cfg.Algorithm, Limit: b.limit(), Learned: b.lim.limit(), Min: b.cfg.Min, Max: b.cfg.Max,
		InFlight: b.inflight, Queued: b.queued, MaxQueue: b.cfg.MaxQueue,
		QueueTimeout: b.cfg.QueueTimeout.String(), Admitted: b.admitted, Shed: map[string]uint64{},
		BaselineMs: float64(b.lim.baseline().Microseconds()) / 1000}
	if !b.share.whole() {
		s.FleetLimit, s.Share = b.share.Fleet, b.share.fraction()
	}
	for _, t := range Tiers {
		s.Shed[t.String()] = b.shed[t.idx()]
	}
	return s
}

// Config returns the parameters in force.
func (b *Bulkhead) Config() Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg
}

// Retune swaps the parameters live. The limit carries over, clamped into the new min–max (a new
// fixed limit is taken as is); calls admitted before teach nothing to the new limiter, and
// drain on the slots they hold. Waiting calls keep their deadlines.
func (b *Bulkhead) Retune(cfg Config, now time.Time) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	start := min(cfg.Max, max(cfg.Min, b.lim.limit()))
	if cfg.Algorithm == Fixed {
		start = cfg.Initial
	}
	b.cfg, b.lim = cfg, newLimiter(cfg, start)
	b.gen++
	b.admit(now) // a higher limit lets waiting calls in at once
	return nil
}
