package bulkhead_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/bulkhead"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func newFixed(t *testing.T, limit, queue int) *bulkhead.Bulkhead {
	t.Helper()
	b, err := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: limit, MaxQueue: queue, QueueTimeout: time.Second})
	require.NoError(t, err)
	return b
}

type state struct {
	admitted, pending bool
	kind              bulkhead.ShedKind
}

func stateOf(b *bulkhead.Bulkhead, tk *bulkhead.Ticket) state {
	ok, _, s, pending := b.Result(tk)
	st := state{admitted: ok, pending: pending}
	if s != nil {
		st.kind = s.Kind
	}
	return st
}

func closed(tk *bulkhead.Ticket) bool {
	select {
	case <-tk.Done():
		return true
	default:
		return false
	}
}

func TestAdmitsUpToTheLimitThenQueues(t *testing.T) {
	b := newFixed(t, 2, 4)
	a1, a2 := b.Enter(at(0), bulkhead.Normal), b.Enter(at(0), bulkhead.Normal)
	require.Nil(t, a1.Done(), "an admitted-at-once ticket needs no wait")
	require.Equal(t, state{admitted: true}, stateOf(b, a1))
	require.Equal(t, state{admitted: true}, stateOf(b, a2))
	w := b.Enter(at(1), bulkhead.Normal)
	require.Equal(t, state{pending: true}, stateOf(b, w))
	require.Equal(t, at(1001), w.Deadline())

	b.Release(a1, at(30), 30*time.Millisecond, false)
	require.True(t, closed(w))
	ok, waited, _, _ := b.Result(w)
	require.True(t, ok)
	require.Equal(t, 29*time.Millisecond, waited)
	snap := b.Snapshot()
	require.Equal(t, 2, snap.InFlight)
	require.Equal(t, 0, snap.Queued)
}

func TestMostCriticalIsAdmittedFirstFIFOWithinTier(t *testing.T) {
	b := newFixed(t, 1, 8)
	hold := b.Enter(at(0), bulkhead.Normal)
	s1 := b.Enter(at(1), bulkhead.Sheddable)
	n1 := b.Enter(at(2), bulkhead.Normal)
	c1 := b.Enter(at(3), bulkhead.Critical)
	n2 := b.Enter(at(4), bulkhead.Normal)
	order := []*bulkhead.Ticket{c1, n1, n2, s1}
	prev := hold
	for i, next := range order {
		b.Release(prev, at(10+i), time.Millisecond, false)
		require.True(t, closed(next), "ticket %d of %d is next", i, len(order))
		for _, later := range order[i+1:] {
			require.False(t, closed(later))
		}
		prev = next
	}
}

func TestFullQueueDisplacesTheNewestOfTheLowestTier(t *testing.T) {
	b := newFixed(t, 1, 3)
	b.Enter(at(0), bulkhead.Normal)
	s1 := b.Enter(at(1), bulkhead.Sheddable)
	s2 := b.Enter(at(2), bulkhead.Sheddable)
	n1 := b.Enter(at(3), bulkhead.Normal)

	c := b.Enter(at(4), bulkhead.Critical)
	require.Equal(t, state{pending: true}, stateOf(b, c))
	require.True(t, closed(s2))
	require.Equal(t, state{kind: bulkhead.Displaced}, stateOf(b, s2))
	require.False(t, closed(s1))

	// An arrival of the lowest waiting tier, or lower, is refused: it displaces nobody.
	s3 := b.Enter(at(5), bulkhead.Sheddable)
	require.Equal(t, state{kind: bulkhead.QueueFull}, stateOf(b, s3))
	n2 := b.Enter(at(6), bulkhead.Normal)
	require.Equal(t, state{kind: bulkhead.Displaced}, stateOf(b, s1))
	require.Equal(t, state{pending: true}, stateOf(b, n2))
	n3 := b.Enter(at(7), bulkhead.Normal)
	require.Equal(t, state{kind: bulkhead.QueueFull}, stateOf(b, n3))
	require.Equal(t, state{pending: true}, stateOf(b, n1))

	_, _, s, _ := b.Result(n3)
	require.Equal(t, "API limit: 1 in flight at limit 1 and the queue is full (3 queued)", s.Reason())
	require.Equal(t, map[string]uint64{"sheddable": 3, "normal": 1, "critical": 0}, b.Snapshot().Shed)
}

func TestSojournIsScaledPerTierAndLowerTiersGoFirst(t *testing.T) {
	b := newFixed(t, 1, 8)
	b.Enter(at(0), bulkhead.Normal)
	c := b.Enter(at(0), bulkhead.Critical)
	s := b.Enter(at(0), bulkhead.Sheddable)
	n := b.Enter(at(0), bulkhead.Normal)
	require.Equal(t, at(2000), c.Deadline())
	require.Equal(t, at(500), s.Deadline())
	require.Equal(t, at(1000), n.Deadline())

	late := b.Enter(at(1900), bulkhead.Sheddable) // deadline 2400, after the critical call's
	b.Expire(c, at(2000))
	require.Equal(t, state{kind: bulkhead.Sojourn}, stateOf(b, late), "the lower call is shed first")
	require.Equal(t, state{kind: bulkhead.Sojourn}, stateOf(b, s))
	require.Equal(t, state{kind: bulkhead.Sojourn}, stateOf(b, n))
	_, _, sh, _ := b.Result(c)
	require.Equal(t, bulkhead.Sojourn, sh.Kind)
	require.Zero(t, sh.LowerWaiting)
	require.Equal(t, 0, b.Snapshot().Queued)

	b.Expire(c, at(2100)) // a second expiry of a decided ticket changes nothing
	require.Equal(t, uint64(1), b.Snapshot().Shed["critical"])
}

func TestLeaveGivesBackASlotOrAPlace(t *testing.T) {
	b := newFixed(t, 1, 2)
	a := b.Enter(at(0), bulkhead.Normal)
	w := b.Enter(at(1), bulkhead.Normal)
	b.Leave(w, at(2))
	require.True(t, closed(w))
	require.Equal(t, 0, b.Snapshot().Queued)
	b.Leave(a, at(3))
	require.Equal(t, 0, b.Snapshot().InFlight)
	b.Release(a, at(4), time.Second, true) // already left: no double release
	require.Equal(t, 0, b.Snapshot().InFlight)
}

func TestRetuneKeepsTheLimitAndAdmitsWaiters(t *testing.T) {
	b := newFixed(t, 1, 4)
	a := b.Enter(at(0), bulkhead.Normal)
	w := b.Enter(at(0), bulkhead.Normal)
	require.NoError(t, b.Retune(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 3, MaxQueue: 4}, at(5)))
	require.True(t, closed(w), "a higher limit lets a waiting call in")
	require.Equal(t, 3, b.Snapshot().Limit)
	require.Equal(t, 2, b.Snapshot().InFlight)
	b.Release(a, at(6), time.Millisecond, false) // admitted under the old tuning: drains
	require.Equal(t, 1, b.Snapshot().InFlight)

	err := b.Retune(bulkhead.Config{Algorithm: bulkhead.AIMD, Min: 8, Max: 4}, at(7))
	var ce *bulkhead.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "max", ce.Field)
	require.True(t, errors.Is(err, bulkhead.ErrConfig))
	require.Equal(t, bulkhead.Fixed, b.Config().Algorithm, "a refused retune changes nothing")
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   bulkhead.Config
		field string
	}{
		{bulkhead.Config{Algorithm: "vegas"}, "limit"},
		{bulkhead.Config{Min: -1}, "min"},
		{bulkhead.Config{Min: 10, Max: 5}, "max"},
		{bulkhead.Config{Min: 2, Max: 4, Initial: 9}, "limit"},
		{bulkhead.Config{MaxQueue: -1}, "max_queue"},
		{bulkhead.Config{QueueTimeout: -time.Second}, "queue_timeout"},
		{bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: bulkhead.MaxLimit + 1}, "limit"},
		{bulkhead.Config{Algorithm: bulkhead.Fixed}, "limit"},
	} {
		_, err := bulkhead.New(tc.cfg)
		var ce *bulkhead.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc.cfg)
		require.Equal(t, tc.field, ce.Field, "%+v: %v", tc.cfg, err)
	}
}

func TestParseTier(t *testing.T) {
	for in, want := range map[string]bulkhead.Tier{"": bulkhead.Normal, "critical": bulkhead.Critical,
		"sheddable": bulkhead.Sheddable, "normal": bulkhead.Normal} {
		got, err := bulkhead.ParseTier(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"urgent", "Critical", " sheddable ", "best_effort"} {
		_, err := bulkhead.ParseTier(in)
		require.ErrorIs(t, err, bulkhead.ErrTier)
		require.ErrorContains(t, err, strconv.Quote(in)+" is not critical, normal or sheddable")
	}
}

// An overloaded reply cuts an adaptive limit; fast replies at the limit raise it; a fixed limit
// never moves.
func TestLimitersLearn(t *testing.T) {
	for _, alg := range []bulkhead.Algorithm{bulkhead.AIMD, bulkhead.Gradient2} {
		b, err := bulkhead.New(bulkhead.Config{Algorithm: alg, Min: 2, Max: 32, Initial: 10, MaxQueue: 100})
		require.NoError(t, err)
		now := at(0)
		for range 400 { // saturated at a flat latency: the limit grows
			var held []*bulkhead.Ticket
			for range b.Snapshot().Limit {
				held = append(held, b.Enter(now, bulkhead.Normal))
			}
			now = now.Add(10 * time.Millisecond)
			for _, tk := range held {
				b.Release(tk, now, 10*time.Millisecond, false)
			}
		}
		grown := b.Snapshot().Limit
		require.Greater(t, grown, 10, alg)
		require.InDelta(t, 10, b.Snapshot().BaselineMs, 0.01, alg)
		for range 3 {
			tk := b.Enter(now, bulkhead.Normal)
			now = now.Add(20 * time.Millisecond)
			b.Release(tk, now, 10*time.Millisecond, true)
		}
		require.Less(t, b.Snapshot().Limit, grown, "%s: overloaded replies cut the limit", alg)
	}
}

// An adaptive limit without an initial value starts at min and learns upward from there.
func TestAdaptiveStartsAtMin(t *testing.T) {
	for _, alg := range []bulkhead.Algorithm{bulkhead.Gradient2, bulkhead.AIMD} {
		b, err := bulkhead.New(bulkhead.Config{Algorithm: alg, Min: 2, Max: 64})
		require.NoError(t, err)
		require.Equal(t, 2, b.Snapshot().Limit, alg)
	}
}
