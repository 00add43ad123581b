package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// auditKeys are the audit line's keys, as ARCHITECTURE.md lists them.
var auditKeys = []string{"run_id", "profile", "tool", "status", "error", "host_calls",
	"host_calls_forwarded", "host_calls_shed", "host_calls_denied", "host_calls_over_budget",
	"host_calls_invalid", "host_calls_failed", "probes", "probes_ok", "breaker_opens",
	"budget_calls", "duration_ms"}

func TestAuditLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := overloadedOnce(503, "5", 200)
		p := writeProfile(t, "http://api.test", healthProfile+"budget:\n  calls: 3\n")
		run := newRun(t, p, api)
		c := newClock()
		doGet(run, "/pets")           // forwarded 503
		doGet(run, "/pets")           // shed
		doGet(run, "/owners")         // denied
		doGet(run, "/pets/..")        // invalid
		c.at(time.Second)             //
		doGet(run, "/pets")           // probe ok, forwarded
		doGet(run, "/pets")           // forwarded
		doGet(run, "/pets")           // over budget
		c.at(1500 * time.Millisecond) // the run took 1.5 s

		a := run.Finish(broker.StatusError, fmt.Errorf("tool threw: token %s rejected\nat line 3", secret))
		line := a.Line()
		require.True(t, bytes.HasSuffix(line, []byte("\n")))
		require.Equal(t, 1, bytes.Count(line, []byte("\n")), "exactly one line")
		assert.NotContains(t, string(line), secret)

		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m))
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := append([]string(nil), auditKeys...)
		sort.Strings(want)
		assert.Equal(t, want, keys)

		assert.Equal(t, map[string]any{
			"run_id": "run-test", "profile": "petstore", "tool": "tool.js", "status": "error",
			"error":      "tool threw: token [redacted] rejected\nat line 3",
			"host_calls": 7.0, "host_calls_forwarded": 3.0, "host_calls_shed": 1.0, "host_calls_denied": 1.0,
			"host_calls_over_budget": 1.0, "host_calls_invalid": 1.0, "host_calls_failed": 0.0,
			"probes": 1.0, "probes_ok": 1.0, "breaker_opens": 1.0, "budget_calls": 3.0, "duration_ms": 1500.0,
		}, m)
	})
}

func TestAuditLineWithoutError(t *testing.T) {
	run := newRun(t, writeProfile(t, "http://127.0.0.1:1", petRoutes), nil)
	a := run.Finish(broker.StatusOK, nil)
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.Line(), &m))
	assert.Equal(t, "", m["error"], "error is always present")
	assert.Equal(t, "ok", m["status"])
	for _, s := range []broker.Status{broker.StatusTimeout, broker.StatusLimit} {
		line := newRun(t, writeProfile(t, "http://127.0.0.1:1", petRoutes), nil).Finish(s, errors.New("x")).Line()
		assert.Contains(t, string(line), `"status":"`+string(s)+`"`)
	}
}

func TestCallsAfterFinishChangeNothing(t *testing.T) {
	api := newUpstream(t, nil)
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	get(t, run, "/pets")
	a := run.Finish(broker.StatusOK, nil)
	trace := run.Trace()

	get(t, run, "/pets")
	get(t, run, "/owners")
	get(t, run, "/pets/..")
	run.Refuse("late refusal")
	assert.Equal(t, a.Counters, run.Counters())
	assert.Equal(t, trace, run.Trace())
}

// TestFinishRacesCalls finishes a run while calls are in flight: whatever the audit line says,
// the counters must not move after it.
func TestFinishRacesCalls(t *testing.T) {
	api := newUpstream(t, nil)
	run := newRun(t, writeProfile(t, api.URL, petRoutes+"budget:\n  calls: 1000\n"), nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					get(t, run, "/owners")
				}
			}
		})
	}
	for run.Counters().HostCalls < 50 {
		get(t, run, "/pets")
	}
	a := run.Finish(broker.StatusOK, nil)
	close(stop)
	wg.Wait()
	assert.Equal(t, a.Counters, run.Counters(), "no call is counted after the audit line")
	assert.Len(t, run.Trace(), a.HostCalls)
}

func TestWriteTraceEmpty(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, broker.WriteTrace(&buf, nil))
	assert.Empty(t, buf.String())
}

// TestProbesAndOpensAfterFinishChangeNothing: a late call may still probe or open the breaker,
// but the counters were closed by the audit line.
func TestProbesAndOpensAfterFinishChangeNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/status" {
				return inMemReply(503, ""), nil
			}
			return inMemReply(503, "", "Retry-After", "2"), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()
		doGet(run, "/pets") // opens [0, 2s)
		a := run.Finish(broker.StatusOK, nil)
		c.at(time.Second)
		doGet(run, "/pets") // picked: probes
		c.at(2 * time.Second)
		doGet(run, "/pets") // forwarded: 503 opens a second window
		require.Equal(t, []string{"/pets", "/status", "/pets"}, api.paths())
		assert.Equal(t, a.Counters, run.Counters())
		assert.Equal(t, a.Counters, run.Finish(broker.StatusOK, nil).Counters, "a second Finish says the same")
	})
}

// TestAnsweredAtSubmission: a call the broker answers itself (invalid, denied) is answered when
// it is started, so the host completes it without a goroutine; a granted call is not, and its
// upstream is reached only by Complete.
func TestAnsweredAtSubmission(t *testing.T) {
	api := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, "[]"), nil }}
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes), api)

	denied := run.StartEnvelope(envelope(t, map[string]any{"method": "GET", "path": "/admin"}))
	assert.True(t, denied.Answered())
	invalid := run.StartEnvelope([]byte(`{"method":`))
	assert.True(t, invalid.Answered())
	granted := run.StartEnvelope(envelope(t, map[string]any{"method": "GET", "path": "/pets"}))
	assert.False(t, granted.Answered())
	assert.Empty(t, api.paths(), "nothing sent before Complete")

	assert.Equal(t, http.StatusForbidden, decodeEnvelope(t, denied.CompleteEnvelope(context.Background())).Status)
	assert.Equal(t, http.StatusOK, decodeEnvelope(t, granted.CompleteEnvelope(context.Background())).Status)
	assert.Equal(t, []string{"/pets"}, api.paths())
}
