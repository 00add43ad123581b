package broker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

// Limits holds the per-API concurrency limits (bulkheads) one process shares across its runs,
// keyed by profile name and, for a profile with per_route, route pattern. A host or daemon makes
// one and passes it to every run's broker (Config.Limits). Safe for concurrent use.
type Limits struct {
	mu      sync.Mutex
	entries map[string]*limitEntry
}

type limitEntry struct {
	profile, route string
	loaded         bulkhead.Config // what the profile said when this entry was last made or reloaded
	retuned        bool            // an operator's retune is in force
	bh             *bulkhead.Bulkhead
}

// NewLimits returns an empty registry.
func NewLimits() *Limits { return &Limits{entries: map[string]*limitEntry{}} }

// ErrNoLimit is returned (wrapped) for a profile no run has used with a concurrency block.
var ErrNoLimit = errors.New("no concurrency limit")

// bulkheadFor returns the bulkhead for a call of p on route, made on first use; nil when p has no
// concurrency block. A reloaded profile whose block changed retunes the live bulkhead, so calls
// in flight drain on the state they captured; an operator's retune lasts until then.
func (l *Limits) bulkheadFor(p *profiles.Profile, route string, now time.Time) *bulkhead.Bulkhead {
	c := p.Concurrency
	if l == nil || c == nil {
		return nil
	}
	if !c.PerRoute {
		route = ""
	}
	key := p.Name + "\x00" + route
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	switch {
	case e == nil:
		bh, err := bulkhead.New(c.Config)
		if err != nil {
			return nil // unreachable: profiles.Load validated the block
		}
		e = &limitEntry{profile: p.Name, route: route, loaded: c.Config, bh: bh}
		l.entries[key] = e
	case e.loaded != c.Config:
		if e.bh.Retune(c.Config, now) == nil {
			e.loaded, e.retuned = c.Config, false
		}
	}
	return e.bh
}

// LimitState is one bulkhead's live numbers, named by profile and route ("" for the whole API).
type LimitState struct {
	Profile string `json:"profile"`
	Route   string `json:"route,omitempty"`
	Retuned bool   `json:"retuned,omitempty"`
	bulkhead.Snapshot
}

// State lists every bulkhead, by profile then route.
func (l *Limits) State() []LimitState {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	out := make([]LimitState, 0, len(l.entries))
	for _, e := range l.entries {
		out = append(out, LimitState{Profile: e.profile, Route: e.route, Retuned: e.retuned, Snapshot: e.bh.Snapshot()})
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b LimitState) int {
		return strings.Compare(a.Profile+"\x00"+a.Route, b.Profile+"\x00"+b.Route)
	})
	return out
}

// Retune changes the parameters of every bulkhead of profile live: change takes the current
// parameters and returns the new ones. The errors name what was wrong: ErrNoLimit, or a
// *bulkhead.ConfigError naming the parameter (then nothing changed).
func (l *Limits) Retune(profile string, change func(bulkhead.Config) bulkhead.Config, now time.Time) ([]LimitState, error) {
	l.mu.Lock()
	var mine []*limitEntry
	for _, e := range l.entries {
		if e.profile == profile {
			mine = append(mine, e)
		}
	}
	l.mu.Unlock()
	if len(mine) == 0 {
		return nil, fmt.Errorf("profile %q: %w: it has no concurrency block, or no run has called it yet", profile, ErrNoLimit)
	}
	for _, e := range mine { // validate all first: a retune is applied whole or not at all
		if err := change(e.bh.Config()).WithDefaults().Validate(); err != nil {
			return nil, err
		}
	}
	var out []LimitState
	for _, e := range mine {
		if err := e.bh.Retune(change(e.bh.Config()), now); err != nil {
			return nil, err
		}
		l.mu.Lock()
		e.retuned = true
		l.mu.Unlock()
		out = append(out, LimitState{Profile: e.profile, Route: e.route, Retuned: true, Snapshot: e.bh.Snapshot()})
	}
	return out, nil
}

// Share bounds every bulkhead to the share of a fleet limit that share returns for it (the zero
// Share: its whole learned limit). A fleet link calls it on every heartbeat.
func (l *Limits) Share(share func(LimitState) bulkhead.Share, now time.Time) {
	l.mu.Lock()
	all := make([]*limitEntry, 0, len(l.entries))
	for _, e := range l.entries {
		all = append(all, e)
	}
	l.mu.Unlock()
	for _, e := range all { // each bulkhead's own lock; never under the registry's
		e.bh.SetShare(share(LimitState{Profile: e.profile, Route: e.route, Snapshot: e.bh.Snapshot()}), now)
	}
}
