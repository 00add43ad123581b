package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
