package broker_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const runParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Forwarded calls carry the run's traceparent when the profile propagates it, replacing the
// tool's; probes never carry one; without propagate_trace nothing is sent.
func TestTraceparentUpstream(t *testing.T) {
	for _, propagate := range []bool{true, false} {
		profile := chartProfile(t, true)
		profile.PropagateTrace = propagate
		synctest.Test(t, func(t *testing.T) {
			var seen []string
			status := 503
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				seen = append(seen, r.URL.RequestURI()+" "+r.Header.Get("Traceparent"))
				if r.URL.RequestURI() == "/v1/status" {
					return reply(200, nil), nil
				}
				if status == 503 {
					status = 200
					return reply(503, http.Header{"Retry-After": {"5"}}), nil
				}
				return reply(200, nil), nil
			})
			run, err := broker.New(broker.Config{Profile: profile, Transport: rt, TraceParent: runParent})
			require.NoError(t, err)
			run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"}) // 503 opens the window
			time.Sleep(1100 * time.Millisecond)
			run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"}) // probed, then forwarded
			want := []string{"/v1/items " + runParent, "/v1/status ", "/v1/items " + runParent}
			if !propagate {
				want = []string{"/v1/items ", "/v1/status ", "/v1/items "}
			}
			assert.Equal(t, want, seen, "propagate_trace=%v", propagate)
		})
	}
}
