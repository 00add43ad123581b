package fleet_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// A replica killed with -9 leaves its heartbeat in the bucket, which the bucket's TTL drops
// after a minute without telling the watchers; the roster must forget it too (README: "one
// killed is forgotten by the bucket after a minute"), or every restart adds a row for good.
func TestAKilledReplicaIsForgottenAfterAMinute(t *testing.T) {
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, skew := aliveOnSkewedClock(ctx, t, ns)
	putBeat(ctx, t, ns.ClientURL(), fleet.Beat{Replica: "killed", Instance: "0123456789ab", At: time.Now().UTC()})
	eventually(t, "alive lists the killed replica", func() bool { return len(f.Members()) == 2 })

	skew.Store(int64(10 * time.Second))
	eventually(t, "the killed replica shown stale", func() bool {
		m := f.Members()
		return len(m) == 2 && m[1].Replica == "killed" && m[1].Stale
	})
	skew.Store(int64(time.Minute + 5*time.Second))
	eventually(t, "the killed replica forgotten after a minute", func() bool {
		m := f.Members()
		return len(m) == 1 && m[0].Replica == "alive"
	})
}

// putBeat stores one heartbeat as a replica (or anyone who may write the bucket) does, and then
// never beats again.
func putBeat(ctx context.Context, t *testing.T, url string, b fleet.Beat) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "plimsoll_test_replicas")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(b)
	if _, err := kv.Put(ctx, base64.RawURLEncoding.EncodeToString([]byte(b.Replica))+"."+b.Instance, v); err != nil {
		t.Fatal(err)
	}
}

// A beat dated an hour ahead (a fast clock, or a writer of the bucket) is taken as sent now: it
// goes stale 5 s later like any, instead of keeping a dead replica live in admin state and in
// every share for the hour; its names are shown escaped and bounded.
func TestABeatFromTheFutureGoesStaleLikeAny(t *testing.T) {
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, skew := aliveOnSkewedClock(ctx, t, ns)
	putBeat(ctx, t, ns.ClientURL(), fleet.Beat{Replica: "ahead\x1b[2J", Instance: "0123456789ab", At: time.Now().Add(time.Hour).UTC(),
		Status: fleet.Status{Windows: []fleet.Window{{Profile: "pets\x1b]0;owned\x07", State: "open"}}}})
	var ahead fleet.Member
	eventually(t, "alive lists the replica from the future", func() bool {
		for _, m := range f.Members() {
			if m.Instance == "0123456789ab" {
				ahead = m
				return true
			}
		}
		return false
	})
	if ahead.Stale || strings.ContainsRune(ahead.Replica, 0x1b) || strings.ContainsRune(ahead.Windows[0].Profile, 0x1b) {
		t.Fatalf("the beat from the future as listed: %+v", ahead)
	}
	skew.Store(int64(6 * time.Second))
	eventually(t, "the replica from the future shown stale 6 s later", func() bool {
		for _, m := range f.Members() {
			if m.Instance == "0123456789ab" {
				return m.Stale
			}
		}
		return false
	})
}

// aliveOnSkewedClock joins replica "alive", heartbeating, on a clock the test moves ahead by skew.
func aliveOnSkewedClock(ctx context.Context, t *testing.T, ns *natsserver.Server) (*fleet.Fleet, *atomic.Int64) {
	t.Helper()
	skew := new(atomic.Int64)
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	f, err := fleet.Join(ctx, fleet.Options{URL: ns.ClientURL(), Name: "test", Replica: "alive", Now: clock}, func(fleet.Change) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if err := f.Heartbeat(ctx, func() fleet.Status { return fleet.Status{} }, t.Logf); err != nil {
		t.Fatal(err)
	}
	return f, skew
}
