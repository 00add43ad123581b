package fleet_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

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
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := fleet.Join(ctx, fleet.Options{URL: ns.ClientURL(), Name: "test", Replica: "alive", Now: clock}, func(fleet.Change) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if err := f.Heartbeat(ctx, func() fleet.Status { return fleet.Status{} }, t.Logf); err != nil {
		t.Fatal(err)
	}
	putKilledBeat(ctx, t, ns.ClientURL())
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

// putKilledBeat stores one heartbeat as a replica does, which then dies without deleting it.
func putKilledBeat(ctx context.Context, t *testing.T, url string) {
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
	b := fleet.Beat{Replica: "killed", Instance: "0123456789ab", At: time.Now().UTC()}
	v, _ := json.Marshal(b)
	if _, err := kv.Put(ctx, base64.RawURLEncoding.EncodeToString([]byte(b.Replica))+"."+b.Instance, v); err != nil {
		t.Fatal(err)
	}
}
