package bulkhead

import (
	"fmt"
	"sync"
	"time"
)

// Bulkhead is one API's limit and queue. It is safe for concurrent use by many runs; every
// method takes the time from the caller.
type Bulkhead struct {
	mu       sync.Mutex
	cfg      Config
	gen      uint64 // bumped by Retune: a ticket teaches only the limiter it was admitted under
	lim      limiter
	inflight int
	queue    [tiers][]*Ticket // FIFO per tier
	queued   int
	admitted uint64
	shed     [tiers]uint64
	share    Share // the fleet's bound (share.go); the zero Share is none
}

// New builds a bulkhead; cfg is completed with WithDefaults and must Validate.
func New(cfg Config) (*Bulkhead, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Bulkhead{cfg: cfg, lim: newLimiter(cfg, cfg.Initial)}, nil
}

// ShedKind says why a call was shed.
type ShedKind string

const (
	QueueFull ShedKind = "queue_full" // at the limit, and the queue held nothing less critical
	Displaced ShedKind = "displaced"  // a more critical call took its place in the queue
	Sojourn   ShedKind = "sojourn"    // it waited past its tier's queue timeout
)

// Shed describes a call the bulkhead refused, with the limit and queue at that moment.
type Shed struct {
	Kind     ShedKind
	Tier     Tier
	Limit    int
	InFlight int
	Queued   int
	Waited   time.Duration
	// LowerWaiting counts the less critical calls still waiting when this one was shed. The
	// rules keep it 0: lower tiers are shed first.
	LowerWaiting int
}

// Reason is the trace's wording.
func (s *Shed) Reason() string {
	switch s.Kind {
	case Displaced:
		return fmt.Sprintf("API limit: displaced from the queue by a more critical call after %s (limit %d, %d in flight, %d queued)", ms(s.Waited), s.Limit, s.InFlight, s.Queued)
	case Sojourn:
		return fmt.Sprintf("API limit: waited %s for a slot, over the %s call's queue timeout (limit %d, %d in flight, %d queued)", ms(s.Waited), s.Tier, s.Limit, s.InFlight, s.Queued)
	}
	return fmt.Sprintf("API limit: %d in flight at limit %d and the queue is full (%d queued)", s.InFlight, s.Limit, s.Queued)
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

type ticketState uint8

const (
	waiting ticketState = iota
	granted
	shed
	done // released after its call, or left
	left // left the queue without a slot
)

// Ticket is one call's place: admitted, waiting, or shed. A waiting ticket's Done channel is
// closed when it is admitted or shed; its holder must call Expire at Deadline, or Leave.
type Ticket struct {
	tier     Tier
	enq      time.Time
	deadline time.Time
	at       time.Time // when it was admitted or shed
	gen      uint64
	state    ticketState
	shed     *Shed
	ch       chan struct{}
}

// Done is closed once the ticket is admitted or shed; nil for a ticket decided at Enter.
func (t *Ticket) Done() <-chan struct{} { return t.ch }

// Deadline is when a waiting ticket is shed for its sojourn.
func (t *Ticket) Deadline() time.Time { return t.deadline }

// Enter asks for a slot for a call of tier t at now. The ticket is admitted, waiting, or shed;
// Result says which once it is decided.
func (b *Bulkhead) Enter(now time.Time, t Tier) *Ticket {
	if t < Sheddable || t > Critical {
		t = Normal
	}
	tk := &Ticket{tier: t, enq: now}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight < b.limit() && b.queued == 0 {
		b.grant(tk, now)
		return tk
	}
	if b.queued >= b.cfg.MaxQueue {
		victim := b.lowestBelow(t)
		if victim == nil {
			b.refuse(tk, now, QueueFull)
			return tk
		}
		b.refuse(victim, now, Displaced)
		b.remove(victim)
	}
	tk.deadline = now.Add(t.sojourn(b.cfg.QueueTimeout))
	tk.ch = make(chan struct{})
	b.queue[t.idx()] = append(b.queue[t.idx()], tk)
	b.queued++
	b.admit(now) // the limit may have room while others queue (it grew since)
	return tk
}

// Result is the ticket's state: admitted (and how long it waited), or shed (and why); pending
// while it waits. A ticket that left the queue (Leave) is neither admitted nor shed.
func (b *Bulkhead) Result(tk *Ticket) (admitted bool, waited time.Duration, s *Shed, pending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch tk.state {
	case waiting:
		return false, 0, nil, true
	case shed:
		return false, tk.at.Sub(tk.enq), tk.shed, false
	case left:
		return false, 0, nil, false
	}
	return true, tk.at.Sub(tk.enq), nil, false
}

// Expire sheds a waiting ticket at its deadline. Every waiting call less critical than it is
// shed first: a critical call is never shed while a lower one waits.
func (b *Bulkhead) Expire(tk *Ticket, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tk.state != waiting {
		return
	}
	for low := Sheddable; low < tk.tier; low++ {
		for len(b.queue[low.idx()]) > 0 {
			v := b.queue[low.idx()][0]
			b.refuse(v, now, Sojourn)
			b.remove(v)
		}
	}
	b.refuse(tk, now, Sojourn)
	b.remove(tk)
}

// Leave gives back a ticket whose call will not be forwarded after all (its run ended, or it was
// shed by something else after the wait): a waiting ticket leaves the queue, an admitted one
// frees its slot and teaches nothing.
func (b *Bulkhead) Leave(tk *Ticket, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch tk.state {
	case waiting:
		b.remove(tk)
		tk.state = left
		close(tk.ch)
	case granted:
		b.release(tk, now)
	}
}

// Release frees an admitted ticket's slot once its call was forwarded and answered, and teaches
// the limit the call's round trip; overloaded is an upstream 503 or 429.
func (b *Bulkhead) Release(tk *Ticket, now time.Time, rtt time.Duration, overloaded bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tk.state != granted {
		return
	}
	if tk.gen == b.gen {
		b.lim.sample(now, rtt, b.fleetInFlight(), overloaded, 1/b.share.fraction())
	}
	b.release(tk, now)
}

func (b *Bulkhead) release(tk *Ticket, now time.Time) {
	tk.state = done
	b.inflight--
	b.admit(now)
}

// admit grants waiting tickets while the limit has room: the most critical first, FIFO within
// a tier.
func (b *Bulkhead) admit(now time.Time) {
	for b.queued > 0 && b.inflight < b.limit() {
		for t := Critical; t >= Sheddable; t-- {
			if q := b.queue[t.idx()]; len(q) > 0 {
				b.remove(q[0])
				b.grant(q[0], now)
				break
			}
		}
	}
}

func (b *Bulkhead) grant(tk *Ticket, now time.Time) {
	b.inflight++
	b.admitted++
	tk.state, tk.at, tk.gen = granted, now, b.gen
	if tk.ch != nil {
		close(tk.ch)
	}
}

func (b *Bulkhead) refuse(tk *Ticket, now time.Time, kind ShedKind) {
	tk.state, tk.at = shed, now
	tk.shed = &Shed{Kind: kind, Tier: tk.tier, Limit: b.limit(), InFlight: b.inflight,
		Queued: b.queued, Waited: now.Sub(tk.enq)}
	for low := Sheddable; low < tk.tier; low++ {
		tk.shed.LowerWaiting += len(b.queue[low.idx()])
	}
	b.shed[tk.tier.idx()]++
	if tk.ch != nil {
		close(tk.ch)
	}
}

// lowestBelow is the newest waiting ticket of the lowest tier below t, or nil.
func (b *Bulkhead) lowestBelow(t Tier) *Ticket {
	for low := Sheddable; low < t; low++ {
		if q := b.queue[low.idx()]; len(q) > 0 {
			return q[len(q)-1]
		}
	}
	return nil
}

func (b *Bulkhead) remove(tk *Ticket) {
	q := b.queue[tk.tier.idx()]
	for i, w := range q {
		if w == tk {
			b.queue[tk.tier.idx()] = append(q[:i:i], q[i+1:]...)
			b.queued--
			return
		}
	}
}
