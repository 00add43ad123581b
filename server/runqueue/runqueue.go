// Package runqueue caps the runs a daemon executes at once and queues a bounded number more,
// shedding by criticality when the queue is full (seed 003): a higher-criticality arrival
// displaces the lowest waiting one, an equal or lower one is refused. Nothing here does I/O.
package runqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Criticality is a request's tier; a higher value is shed later.
type Criticality int

const (
	Sheddable Criticality = iota
	Normal
	Critical
)

var names = [...]string{Sheddable: "sheddable", Normal: "normal", Critical: "critical"}

func (c Criticality) String() string {
	if c < Sheddable || c > Critical {
		return fmt.Sprintf("criticality(%d)", int(c))
	}
	return names[c]
}

// ParseCriticality reads a Plimsoll-Criticality value; "" is Normal.
func ParseCriticality(s string) (Criticality, error) {
	switch s {
	case "", "normal":
		return Normal, nil
	case "critical":
		return Critical, nil
	case "sheddable":
		return Sheddable, nil
	}
	return Normal, fmt.Errorf("%w: %q is not critical, normal or sheddable", ErrCriticality, s)
}

var (
	// ErrCriticality is a criticality value that is not one of the three.
	ErrCriticality = errors.New("unknown criticality")
	// ErrShed is a request refused or displaced because the queue was full: busy, not broken.
	ErrShed = errors.New("admission: shed")
)

// ShedError says why a request was shed.
type ShedError struct {
	Criticality Criticality
	Displaced   bool // a higher-criticality arrival took its place in the queue
}

func (e *ShedError) Error() string {
	if e.Displaced {
		return fmt.Sprintf("a %s request was displaced from the full queue by a more critical one", e.Criticality)
	}
	return fmt.Sprintf("the run queue is full: a %s request cannot wait", e.Criticality)
}

func (e *ShedError) Is(target error) bool { return target == ErrShed }

// Controller admits up to Live requests at once and lets up to Queue more wait.
type Controller struct {
	mu      sync.Mutex
	live    int
	maxLive int
	maxWait int
	waiting []*waiter // in arrival order
	arrived int       // requests that entered, however they were answered
}

type waiter struct {
	crit  Criticality
	ready chan error // nil: admitted; else why it was shed
}

// New makes a Controller; maxLive is at least 1 and maxQueue at least 0.
func New(maxLive, maxQueue int) *Controller {
	return &Controller{maxLive: max(maxLive, 1), maxWait: max(maxQueue, 0)}
}

// Acquire waits for a slot. On success the caller must call the returned release exactly once.
// It fails with a *ShedError (matches ErrShed) or with ctx's error.
func (c *Controller) Acquire(ctx context.Context, crit Criticality) (release func(), err error) {
	w, err := c.enter(crit)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return c.release, nil
	}
	select {
	case err := <-w.ready:
		if err != nil {
			return nil, err
		}
		return c.release, nil
	case <-ctx.Done():
		if c.leave(w) {
			return nil, ctx.Err()
		}
		// It was admitted or shed as the context ended: take that answer.
		if err := <-w.ready; err != nil {
			return nil, err
		}
		c.release()
		return nil, ctx.Err()
	}
}

// enter takes a slot at once (nil waiter), queues, or sheds.
func (c *Controller) enter(crit Criticality) (*waiter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arrived++
	if c.live < c.maxLive && len(c.waiting) == 0 {
		c.live++
		return nil, nil
	}
	w := &waiter{crit: crit, ready: make(chan error, 1)}
	if len(c.waiting) < c.maxWait {
		c.waiting = append(c.waiting, w)
		return w, nil
	}
	i := c.victim()
	if i < 0 || c.waiting[i].crit >= crit {
		return nil, &ShedError{Criticality: crit}
	}
	v := c.waiting[i]
	c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
	v.ready <- &ShedError{Criticality: v.crit, Displaced: true}
	c.waiting = append(c.waiting, w)
	return w, nil
}

// victim is the index of the lowest-criticality waiter, the latest arrival among equals (it has
// waited least); -1 when nobody waits.
func (c *Controller) victim() int {
	best := -1
	for i, w := range c.waiting {
		if best < 0 || w.crit <= c.waiting[best].crit {
			best = i
		}
	}
	return best
}

// next is the index of the waiter to admit: the highest criticality, the earliest among equals.
func (c *Controller) next() int {
	best := -1
	for i, w := range c.waiting {
		if best < 0 || w.crit > c.waiting[best].crit {
			best = i
		}
	}
	return best
}

func (c *Controller) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := c.next(); i >= 0 {
		w := c.waiting[i]
		c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
		w.ready <- nil // the slot passes straight to it
		return
	}
	c.live--
}

// leave removes w from the queue; false when it was already admitted or shed.
func (c *Controller) leave(w *waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.waiting {
		if x == w {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// Stats is a snapshot of the controller.
type Stats struct {
	Live, Waiting int
	ByTier        [3]int // waiting per criticality
	Arrived       int    // requests that have entered so far
}

// Stats returns the live and waiting counts.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Live: c.live, Waiting: len(c.waiting), Arrived: c.arrived}
	for _, w := range c.waiting {
		s.ByTier[w.crit]++
	}
	return s
}
