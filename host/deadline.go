package host

import (
	"context"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// activeClock ends a run once it has been active for limits.run_timeout, where time in which
// at least one of its calls waits for a person does not count: a person's pace is not the tool's.
// The profile's approvals.wall_clock_cap bounds the run's whole life, waits included.
type activeClock struct {
	limit time.Duration

	mu      sync.Mutex
	used    time.Duration // active time before the current stretch
	since   time.Time     // start of the current active stretch; zero while paused
	waiting int
	timer   *time.Timer
	expire  func()
}

// newActiveClock is nil for a profile without approvals: its run_timeout stays wall-clock time.
func newActiveClock(p *profiles.Profile) *activeClock {
	if p.Approvals == nil {
		return nil
	}
	return &activeClock{limit: p.Limits.OrDefaults().RunTimeout}
}

// deadline returns ctx ended by the active-time limit and the wall-clock cap; stop releases
// the timers.
func (c *activeClock) deadline(ctx context.Context, p *profiles.Profile) (context.Context, func()) {
	wallCap := p.Approvals.WallClockCap
	ctx, cancelWall := context.WithTimeoutCause(ctx, wallCap,
		&TimeoutError{Limit: "approvals.wall_clock_cap", After: wallCap})
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	c.since = time.Now()
	c.expire = func() { cancel(&TimeoutError{Limit: "limits.run_timeout", After: c.limit}) }
	c.timer = time.AfterFunc(c.limit, c.expire)
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
		cancel(nil)
		cancelWall()
	}
}

// pause stops the clock while a call waits for a person; calls may wait at once.
func (c *activeClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting++; c.waiting == 1 && c.timer != nil {
		c.timer.Stop()
		c.used += time.Since(c.since)
		c.since = time.Time{}
	}
}

// resume starts the clock again once no call waits.
func (c *activeClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting--; c.waiting == 0 && c.timer != nil {
		c.since = time.Now()
		c.timer.Reset(max(c.limit-c.used, 0))
	}
}

// wrap pauses the clock around every wait for a person.
func (c *activeClock) wrap(a broker.Approver) broker.Approver {
	if c == nil || a == nil {
		return a
	}
	return pausingApprover{a, c}
}

type pausingApprover struct {
	inner broker.Approver
	clock *activeClock
}

func (p pausingApprover) Approve(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	p.clock.pause()
	defer p.clock.resume()
	return p.inner.Approve(ctx, q)
}
