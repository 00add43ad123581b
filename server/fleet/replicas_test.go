package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// JetStream keeps 1 to 5 copies of a bucket: any other count is refused before connecting.
func TestJoinRefusesAReplicaCountJetStreamCannotKeep(t *testing.T) {
	for _, n := range []int{-1, 6} {
		_, err := fleet.Join(context.Background(), fleet.Options{URL: "nats://127.0.0.1:1", Name: "a", Replica: "r", Replicas: n}, func(fleet.Change) {})
		if !errors.Is(err, fleet.ErrBadOptions) || !strings.Contains(err.Error(), "Replicas") {
			t.Fatalf("Join with Replicas %d: %v, want ErrBadOptions naming Replicas", n, err)
		}
	}
}

// More copies than the NATS deployment has servers is refused at Join, naming the bucket: a
// replica never starts on a bucket it could not create.
func TestJoinRefusesMoreCopiesThanServers(t *testing.T) {
	ns := natstest.Start(t)
	_, err := fleet.Join(context.Background(), fleet.Options{URL: ns.ClientURL(), Name: "one", Replica: "r", Replicas: 3}, func(fleet.Change) {})
	if err == nil || !strings.Contains(err.Error(), "flags bucket") {
		t.Fatalf("Join with 3 copies on a single NATS server: %v, want the flags bucket refused", err)
	}
}

// A replica started beside its NATS cluster waits for the cluster rather than failing: with two
// of three nodes of a fresh cluster up no JetStream leader is elected and a bucket's creation
// goes unanswered, so Join asks again (every 5 s) until the third node joins.
func TestJoinWaitsForTheClusterToPlaceItsBuckets(t *testing.T) {
	members := natstest.Members(t, 3)
	two := natstest.Launch(t, members[:2]...)
	refused := make(chan error, 1)
	defer fleet.OnClusterNotReady(func(err error) {
		select {
		case refused <- err:
		default:
		}
	})()
	joined := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		f, err := fleet.Join(ctx, fleet.Options{URL: two[0].ClientURL() + "," + two[1].ClientURL(), Name: "early", Replica: "r", Replicas: 3}, func(fleet.Change) {})
		if err == nil {
			t.Cleanup(f.Close)
		}
		joined <- err
	}()
	select {
	case err := <-refused:
		t.Logf("two of three nodes up: %v", err)
	case err := <-joined:
		t.Fatalf("Join with two of three nodes up returned before any refusal: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no refusal from a cluster missing a node in 60 s")
	}
	natstest.Launch(t, members[2])
	if err := <-joined; err != nil {
		t.Fatalf("Join after the third node joined: %v", err)
	}
}
