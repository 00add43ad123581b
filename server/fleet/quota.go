package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Client quotas across replicas (issue 27): every replica counts its own admissions and publishes
// them for the current window to the fleet's quotas bucket; a watch on the bucket keeps every
// other replica's latest counts, so a replica's view of the others is one publication old at
// most. The bucket keeps a window's counts only a little past its end (TTL).

// Count is one client's count of one kind in a window, as a replica publishes it.
type Count struct {
	Client string `json:"client"`
	Kind   string `json:"kind"` // runs or calls
	N      int    `json:"n"`
}

// Usage is one replica's counts in one window: the value of its key in the quotas bucket.
type Usage struct {
	Replica  string    `json:"replica"`
	Instance string    `json:"instance"`
	Window   time.Time `json:"window"` // the window's start
	Counts   []Count   `json:"counts"`
}

// maxQuotaKeys bounds the other instances' publications kept: a few windows of a fleet's
// replicas, never what a writer dating keys into the future could add.
const maxQuotaKeys = 4096

// quotaTTL outlives a window and the next, so a late reader still finds the last one.
const quotaTTL = 2 * time.Minute

// Quotas is this replica's access to the fleet's quotas bucket, plimsoll_<fleet>_quotas.
type Quotas struct {
	f  *Fleet
	kv jetstream.KeyValue

	mu         sync.Mutex
	latest     map[string]Usage // every other instance's latest publication, by key
	watch      jetstream.KeyWatcher
	reconnects uint64 // the connection's reconnects when the watch was started
}

// Quotas opens (or makes) the fleet's quotas bucket and starts watching it.
func (f *Fleet) Quotas(ctx context.Context) (*Quotas, error) {
	js, err := jetstream.New(f.nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: jetstream: %w", err)
	}
	kv, err := makeBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: "plimsoll_" + f.opt.Name + "_quotas", Description: "plimsoll client quota counts per replica and window", TTL: quotaTTL, Replicas: f.opt.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: quotas bucket: %w", err)
	}
	q := &Quotas{f: f, kv: kv, latest: map[string]Usage{}}
	return q, q.rewatch()
}

// rewatch (re)starts the watch; after NATS was unreachable the old one may have stalled, so it is
// replaced rather than trusted.
func (q *Quotas) rewatch() error {
	reconnects := q.f.nc.Stats().Reconnects
	w, err := watchPatiently(context.Background(), q.kv, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("fleet: watch quota counts: %w", err)
	}
	q.mu.Lock()
	old := q.watch
	q.watch, q.reconnects = w, reconnects
	q.mu.Unlock()
	stopLater(old)
	go q.follow(w)
	return nil
}

// Stop ends the watch.
func (q *Quotas) Stop() {
	q.mu.Lock()
	w := q.watch
	q.watch = nil
	q.mu.Unlock()
	stopLater(w)
}

// stopLater stops a watch without waiting: after a reconnect, stopping the old one can wait
// seconds for NATS to answer, and nothing depends on it being gone (its updates are dropped).
func stopLater(w jetstream.KeyWatcher) {
	if w != nil {
		go func() { _ = w.Stop() }()
	}
}

// follow keeps the other instances' latest counts. A value that is not a well-formed Usage under
// its writer's own key is skipped: the bucket's writers are trusted with counts only.
func (q *Quotas) follow(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		if e == nil {
			continue // the end of the current values
		}
		var u Usage
		if json.Unmarshal(e.Value(), &u) != nil || e.Key() != windowPrefix(u.Window)+"."+u.Instance || u.Instance == q.f.instance {
			continue
		}
		q.mu.Lock()
		if _, known := q.latest[e.Key()]; q.watch == w && (known || len(q.latest) < maxQuotaKeys) {
			q.latest[e.Key()] = u
		}
		q.mu.Unlock()
	}
}

func windowPrefix(window time.Time) string { return "w" + strconv.FormatInt(window.Unix(), 10) }

// Publish puts this replica's counts for window into the bucket; after a reconnect it also
// starts the watch afresh.
func (q *Quotas) Publish(ctx context.Context, window time.Time, own []Count) error {
	b, err := json.Marshal(Usage{Replica: q.f.opt.Replica, Instance: q.f.instance, Window: window, Counts: own})
	if err != nil {
		return err
	}
	if _, err := q.kv.Put(ctx, windowPrefix(window)+"."+q.f.instance, b); err != nil {
		return fmt.Errorf("fleet: publish quota counts: %w", err)
	}
	q.mu.Lock()
	stale := q.reconnects != q.f.nc.Stats().Reconnects
	q.mu.Unlock()
	if stale {
		return q.rewatch()
	}
	return nil
}

// Others is the sum of the other instances' latest counts for window; negative counts are
// skipped, and publications of earlier windows are forgotten.
func (q *Quotas) Others(window time.Time) []Count {
	prefix := windowPrefix(window) + "."
	sum := map[[2]string]int{}
	q.mu.Lock()
	for k, u := range q.latest {
		switch {
		case u.Window.Before(window):
			delete(q.latest, k)
		case strings.HasPrefix(k, prefix):
			for _, c := range u.Counts {
				if c.N > 0 { // capped, so no sum of forged counts wraps around
					sum[[2]string{c.Client, c.Kind}] += min(c.N, 1<<30)
				}
			}
		}
	}
	q.mu.Unlock()
	out := make([]Count, 0, len(sum))
	for k, n := range sum {
		out = append(out, Count{Client: k[0], Kind: k[1], N: n})
	}
	return out
}

// Live is how many replicas' heartbeats are fresh, this one included: the share a quota is
// split into while NATS is unreachable.
func (f *Fleet) Live() int {
	n := 0
	for _, m := range f.Members() {
		if !m.Stale {
			n++
		}
	}
	return max(1, n)
}

// ErrReserveContended is Reserve's error when its context ended while every round it tried lost
// to another replica's write: NATS answered, the quota's total was just never still.
var ErrReserveContended = errors.New("fleet: quota reservation lost every compare-and-set round")

// Reserve takes up to want units of a quota of limit for client's kind (runs or calls) in the
// window starting at window, from the fleet's running total under one key, by compare-and-set:
// every replica's reservations are serialised on that key, so together they never pass limit.
// It returns the units taken; 0 means the fleet has reserved the whole quota for the window.
// A lost round reads again until ctx ends: then ErrReserveContended if rounds were being lost.
func (q *Quotas) Reserve(ctx context.Context, window time.Time, client, kind string, want, limit int) (int, error) {
	key := reserveKey(window, client, kind)
	lost := false
	for {
		total, rev, err := q.reserved(ctx, key)
		if err == nil {
			got := min(want, limit-total)
			if got <= 0 {
				return 0, nil
			}
			if err = q.put(ctx, key, total+got, rev); err == nil {
				return got, nil
			}
			if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				lost = true // another replica reserved meanwhile: read again
				continue
			}
		}
		if lost && ctx.Err() != nil {
			return 0, ErrReserveContended
		}
		return 0, fmt.Errorf("fleet: reserve quota: %w", err)
	}
}

// put writes a running total if key is still at rev (0: if it does not exist yet).
func (q *Quotas) put(ctx context.Context, key string, total int, rev uint64) error {
	v := []byte(strconv.Itoa(total))
	if rev == 0 {
		_, err := q.kv.Create(ctx, key, v)
		return err
	}
	_, err := q.kv.Update(ctx, key, v, rev)
	return err
}

// reserved reads a key's running total and revision; a missing key is 0 at revision 0. A value
// that is not a count (a hostile writer) reads as the whole quota spent: refuse, never admit more.
func (q *Quotas) reserved(ctx context.Context, key string) (total int, rev uint64, err error) {
	e, err := q.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	n, perr := strconv.Atoi(string(e.Value()))
	if perr != nil || n < 0 {
		n = math.MaxInt32
	}
	return n, e.Revision(), nil
}

// reserveKey is a window's reservation key for one client's kind; the client's name is encoded,
// since a key allows only a few characters.
func reserveKey(window time.Time, client, kind string) string {
	return "r" + strconv.FormatInt(window.Unix(), 10) + "." + kind + "." + base64.RawURLEncoding.EncodeToString([]byte(client))
}
