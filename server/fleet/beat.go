package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/plimsoll/plimsoll/internal/clienttext"
)

// Heartbeats: every replica puts its status into the fleet's replicas bucket every BeatEvery and
// watches the bucket into its roster, so any replica's admin state lists the whole fleet.

const (
	BeatEvery  = time.Second     // how often a replica says it is alive
	StaleAfter = 5 * time.Second // a replica silent this long is marked stale
	beatTTL    = time.Minute     // the bucket forgets a replica silent this long (kill -9 leaves one)
)

// Status is what a replica's heartbeat says of it.
type Status struct {
	LiveRuns int    `json:"live_runs"`
	Digest   string `json:"digest"` // the profile set it serves (sha256 over names and contents)
	// Limits are its API limits, shared across the fleet (limits.go).
	Limits []APILimit `json:"limits,omitempty"`
	// Windows are its open breaker windows by profile, for admin state.
	Windows []Window `json:"windows,omitempty"`
}

// Beat is one heartbeat as stored: Instance tells two processes apart that share a Replica name.
type Beat struct {
	Replica  string    `json:"replica"`
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
	Status
}

// Member is one replica in the roster as admin state shows it.
type Member struct {
	Beat
	Stale         bool `json:"stale,omitempty"`          // no heartbeat for StaleAfter
	DigestDiffers bool `json:"digest_differs,omitempty"` // serves other profiles than the replica asked
	NameShared    bool `json:"name_shared,omitempty"`    // another live instance has the same name
}

// Roster turns the last heartbeats into the fleet's members at now: stale ones marked, a digest
// other than own's marked, and a name two live instances share marked. Sorted by replica name.
func Roster(beats []Beat, own Beat, now time.Time) []Member {
	live := map[string]int{}
	out := make([]Member, 0, len(beats))
	for _, b := range beats {
		m := Member{Beat: b, Stale: now.Sub(b.At) > StaleAfter}
		m.DigestDiffers = !m.Stale && b.Digest != own.Digest
		if !m.Stale {
			live[b.Replica]++
		}
		out = append(out, m)
	}
	for i := range out {
		out[i].NameShared = !out[i].Stale && live[out[i].Replica] > 1
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Replica != out[j].Replica {
			return out[i].Replica < out[j].Replica
		}
		return out[i].Instance < out[j].Instance
	})
	return out
}

func newInstance() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// openBeats makes the replicas bucket if need be and starts the watch that keeps the roster.
func (f *Fleet) openBeats(ctx context.Context, js jetstream.JetStream) error {
	kv, err := makeBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: "plimsoll_" + f.opt.Name + "_replicas", Description: "plimsoll replica heartbeats", TTL: beatTTL, Replicas: f.opt.Replicas,
	})
	if err != nil {
		return fmt.Errorf("fleet: replicas bucket: %w", err)
	}
	f.beats = kv
	return f.watchBeats()
}

// watchBeats (re)starts the watch that keeps the roster; after a reconnect the old one may have
// stalled, so it is replaced rather than trusted.
func (f *Fleet) watchBeats() error {
	w, err := watchPatiently(context.Background(), f.beats)
	if err != nil {
		return fmt.Errorf("fleet: watch replicas: %w", err)
	}
	f.mu.Lock()
	select {
	case <-f.done: // a reconnect's re-watch that lost the race with Close: Close read the old one
		f.mu.Unlock()
		return w.Stop()
	default:
	}
	old := f.beatWatch
	f.beatWatch = w
	f.mu.Unlock()
	if old != nil {
		_ = old.Stop()
	}
	go f.followBeats(w)
	return nil
}

// followBeats keeps the last heartbeat of every instance.
func (f *Fleet) followBeats(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		if e == nil {
			continue
		}
		f.mu.Lock()
		var b Beat
		switch {
		case e.Operation() != jetstream.KeyValuePut:
			delete(f.roster, e.Key())
		case json.Unmarshal(e.Value(), &b) == nil && b.key() == e.Key():
			b.bound(f.now())
			if b.At.After(f.roster[e.Key()].At) {
				f.roster[e.Key()] = b // never an older beat over a newer one (a replaced watch's stragglers)
			}
		}
		f.mu.Unlock()
	}
}

func (b Beat) key() string { return enc(b.Replica) + "." + b.Instance }

// maxBeatRows bounds a beat's limits and windows: a replica has a few profiles, not thousands.
const maxBeatRows = 256

// bound makes a beat read from the bucket safe to keep and show: a time ahead of this replica's
// clock is taken as now (a fast clock or a forger cannot keep a dead replica live, or in a
// share, for longer than a beat's staleness), its lists are capped and its names bounded and
// escaped (clienttext), so an operator's terminal or page shows them as text.
func (b *Beat) bound(now time.Time) {
	if b.At.After(now) {
		b.At = now
	}
	b.Replica, b.Instance, b.Digest = clienttext.Name(b.Replica), clienttext.Name(b.Instance), clienttext.Name(b.Digest)
	b.Limits, b.Windows = b.Limits[:min(len(b.Limits), maxBeatRows)], b.Windows[:min(len(b.Windows), maxBeatRows)]
	for i := range b.Limits {
		b.Limits[i].Profile, b.Limits[i].Route = clienttext.Name(b.Limits[i].Profile), clienttext.Name(b.Limits[i].Route)
	}
	for i := range b.Windows {
		b.Windows[i].Profile, b.Windows[i].State = clienttext.Name(b.Windows[i].Profile), clienttext.Name(b.Windows[i].State)
	}
}

// Heartbeat starts this replica's heartbeats, status read afresh for each, until Close; the first
// is put before it returns. A second live instance with this replica's name is logged by warn.
func (f *Fleet) Heartbeat(ctx context.Context, status func() Status, warn func(msg string, args ...any)) error {
	if err := f.beat(ctx, status()); err != nil {
		return err
	}
	f.beating.Go(func() {
		t := time.NewTicker(BeatEvery)
		defer t.Stop()
		warned := false
		for {
			select {
			case <-f.done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), BeatEvery)
			_ = f.beat(ctx, status()) // a partition: the next tick tries again; Degraded says why
			cancel()
			shared := f.NameShared()
			if shared && !warned {
				warn("another live replica uses this replica's name: give each a --replica of its own", "replica", f.opt.Replica)
			}
			warned = shared
		}
	})
	return nil
}

func (f *Fleet) beat(ctx context.Context, st Status) error {
	b := Beat{Replica: f.opt.Replica, Instance: f.instance, At: f.now().UTC(), Status: st}
	f.mu.Lock()
	f.own = b
	f.mu.Unlock()
	v, _ := json.Marshal(b)
	if _, err := f.beats.Put(ctx, b.key(), v); err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	return nil
}

// Members is the fleet's roster now, as Roster marks it against this replica's last heartbeat.
// A beat older than the bucket's TTL is dropped: the bucket forgot it too, and tells no watcher.
func (f *Fleet) Members() []Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	beats := make([]Beat, 0, len(f.roster))
	for k, b := range f.roster {
		if now.Sub(b.At) > beatTTL {
			delete(f.roster, k)
			continue
		}
		beats = append(beats, b)
	}
	return Roster(beats, f.own, now)
}

// NameShared says whether another live instance heartbeats under this replica's name.
func (f *Fleet) NameShared() bool {
	for _, m := range f.Members() {
		if m.Instance == f.instance && m.NameShared {
			return true
		}
	}
	return false
}

func (f *Fleet) now() time.Time {
	if f.opt.Now != nil {
		return f.opt.Now()
	}
	return time.Now()
}
