package server

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ForcedOpen is an operator's forced-open flag on one profile: every call of the profile's live
// and new runs is shed by the run's broker until it is cleared. It is an operator action, not
// configuration: it survives profile reloads (it is keyed by profile name) and is lost on restart.
type ForcedOpen struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// MaxForcedReason caps the operator's reason: it goes on every shed call's trace entry, its
// answer to the tool, and the audit line.
const MaxForcedReason = 200

// flagCell is one profile's flag. Each run's broker holds its profile's cell and reads it at
// every call's admission: one atomic load, never a lock, never a look-up by name.
type flagCell struct{ v atomic.Pointer[ForcedOpen] }

func (c *flagCell) read() (string, bool) {
	if f := c.v.Load(); f != nil {
		return f.Reason, true
	}
	return "", false
}

// forcedFlags are the daemon's forced-open flags, by profile name. Cells are made on first use
// and never removed, so a run started before a force-open still sees it.
type forcedFlags struct {
	mu    sync.Mutex
	cells map[string]*flagCell
}

func newForcedFlags() *forcedFlags { return &forcedFlags{cells: map[string]*flagCell{}} }

// cell returns profile's cell, made if need be.
func (f *forcedFlags) cell(profile string) *flagCell {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.cells[profile]
	if c == nil {
		c = &flagCell{}
		f.cells[profile] = c
	}
	return c
}

// set forces profile open; forcing it again changes the reason and keeps the first Since.
func (f *forcedFlags) set(profile, reason string, now time.Time) ForcedOpen {
	c := f.cell(profile)
	f.mu.Lock() // serialises set and clear, so Since is kept across a repeated force-open
	defer f.mu.Unlock()
	v := ForcedOpen{Reason: reason, Since: now}
	if old := c.v.Load(); old != nil {
		v.Since = old.Since
	}
	c.v.Store(&v)
	return v
}

// clear lifts profile's flag and returns the one it lifted, if any.
func (f *forcedFlags) clear(profile string) *ForcedOpen {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cells[profile]; c != nil {
		return c.v.Swap(nil)
	}
	return nil
}

// get returns profile's flag, nil when it is not forced open.
func (f *forcedFlags) get(profile string) *ForcedOpen {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cells[profile]; c != nil {
		return c.v.Load()
	}
	return nil
}

// forced lists the profiles forced open now, by name.
func (f *forcedFlags) forced() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, c := range f.cells {
		if c.v.Load() != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
