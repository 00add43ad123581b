package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Codes NATS answers while a cluster cannot yet place a bucket's copies: too few nodes have
// joined, or the meta leader is still being elected.
const (
	codeNoSuitablePeers       jetstream.ErrorCode = 10005
	codeClusterNotAvailable   jetstream.ErrorCode = 10008
	codeInsufficientResources jetstream.ErrorCode = 10023
)

// retryPause is the wait between two asks while a cluster is not ready; askTimeout bounds one
// ask, so a caller's long deadline still leaves room to ask again.
const (
	retryPause = 250 * time.Millisecond
	askTimeout = 5 * time.Second
)

// notReadyHook, when set (tests only), sees each answer that made makeBucket ask again.
var notReadyHook func(error)

// makeBucket opens (or makes) a bucket, asking again for up to watchPatience while the cluster
// is not ready for it — a freshly started cluster may take longer than one request's 5 s to
// elect the new stream's leader, and a replica started beside its NATS cluster is no reason to fail.
func makeBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	give := time.Now().Add(watchPatience)
	for {
		kv, err := ask(ctx, js, cfg)
		if err == nil || !clusterNotReady(err) || ctx.Err() != nil || time.Now().After(give) {
			return kv, err
		}
		if notReadyHook != nil {
			notReadyHook(err)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(retryPause):
		}
	}
}

// clusterNotReady reports an answer that a later ask may not get: a timeout, no responder yet,
// or a placement the cluster cannot make until more nodes join.
func clusterNotReady(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case codeNoSuitablePeers, codeClusterNotAvailable, codeInsufficientResources:
		return true
	}
	return false
}

func ask(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	return js.CreateOrUpdateKeyValue(ctx, cfg)
}
