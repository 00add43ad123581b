package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback that decodes what it is sent.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces, application/x-protobuf", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					rc.services = append(rc.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *otlpReceiver) all() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

func attrs(kv []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, a := range kv {
		switch v := a.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[a.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[a.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[a.Key] = v.BoolValue
		}
	}
	return m
}

// headerLog is a loopback API that remembers each call's traceparent.
type headerLog struct {
	*upstream
	mu     sync.Mutex
	parent []string
}

func newHeaderLog(t *testing.T) *headerLog {
	h := &headerLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.parent = append(h.parent, r.Header.Get("Traceparent"))
		h.mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	h.upstream = &upstream{Server: srv, release: make(chan struct{})}
	t.Cleanup(srv.Close)
	return h
}

func (h *headerLog) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.parent...)
}

// withTracedProfile adds a profile "traced" that lets its calls carry traceparent upstream.
func withTracedProfile(baseURL string) option {
	return func(c *server.Config) {
		body := "base_url: " + baseURL + "/api\ncredential:\n  env: UPSTREAM_TOKEN\n  scheme: Bearer\nroutes:\n  - GET /*\npropagate_trace: true\n"
		os.WriteFile(filepath.Join(c.ProfilesDir, "traced.yaml"), []byte(body), 0o644)
	}
}

func withEnv(kv map[string]string) option {
	return func(c *server.Config) {
		env := c.Getenv
		c.Getenv = func(k string) string {
			if v, ok := kv[k]; ok {
				return v
			}
			return env(k)
		}
	}
}

const (
	agentTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	agentSpan   = "00f067aa0ba902b7"
	agentParent = "00-" + agentTrace + "-" + agentSpan + "-01"
	tenCalls    = `for (let i = 0; i < 9; i++) await api.get("/item-" + i, {query: "q=private-query"}); await api.get("/nope/x/y"); return "ok";`
)

func TestOpenTelemetrySpansReachAnOTLPReceiver(t *testing.T) {
	rc := newOTLPReceiver(t)
	up := newHeaderLog(t)
	d := start(t, up.upstream, withTracedProfile(up.URL), withEnv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_SERVICE_NAME": "plimsoll-test"}))

	resp, b := d.do("POST", "/v1/runs", tokenB, run("traced", tenCalls), "Traceparent", agentParent)
	require.Equal(t, 200, resp.StatusCode, string(b))
	a := decode[answer](t, b)
	resp, _ = d.do("POST", "/v1/runs", tokenB, run("petstore", `await api.get("/item-1"); return 1;`), "Traceparent", agentParent)
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, d.shutdown()) // the drain exports what is left

	spans := rc.all()
	var runSpan *tracepb.Span
	for _, s := range spans {
		if s.Name == "plimsoll.run" && attrs(s.Attributes)["plimsoll.run_id"] == a.RunID {
			runSpan = s
		}
	}
	require.NotNil(t, runSpan, "the run's span was exported")
	assert.Equal(t, agentTrace, hex.EncodeToString(runSpan.TraceId), "the run is in the agent's trace")
	assert.Equal(t, agentSpan, hex.EncodeToString(runSpan.ParentSpanId), "a child of the agent's span")
	ra := attrs(runSpan.Attributes)
	assert.Equal(t, "traced", ra["plimsoll.profile"])
	assert.Equal(t, "agent-b", ra["plimsoll.client"])
	assert.True(t, strings.HasPrefix(ra["plimsoll.tool_digest"].(string), "sha256:"))
	assert.Equal(t, "ok", ra["plimsoll.status"])
	assert.EqualValues(t, 10, ra["plimsoll.host_calls"])
	assert.EqualValues(t, 9, ra["plimsoll.host_calls_forwarded"])
	assert.EqualValues(t, 1, ra["plimsoll.host_calls_denied"])
	assert.Contains(t, rc.services, "plimsoll-test")

	var calls []*tracepb.Span
	for _, s := range spans {
		if bytes.Equal(s.ParentSpanId, runSpan.SpanId) {
			calls = append(calls, s)
		}
	}
	require.Len(t, calls, 10, "one child span per call")
	outcomes := map[string]int{}
	for _, c := range calls {
		ca := attrs(c.Attributes)
		outcomes[ca["plimsoll.outcome"].(string)]++
		assert.Equal(t, "GET", ca["http.request.method"])
		assert.Equal(t, "closed", ca["plimsoll.breaker"])
		assert.GreaterOrEqual(t, c.EndTimeUnixNano, c.StartTimeUnixNano)
		assert.GreaterOrEqual(t, c.StartTimeUnixNano, runSpan.StartTimeUnixNano, "calls lie inside the run")
		assert.LessOrEqual(t, c.EndTimeUnixNano, runSpan.EndTimeUnixNano+uint64(1e6))
		if ca["plimsoll.outcome"] == "forwarded" {
			assert.Equal(t, "GET /*", ca["http.route"])
			assert.Equal(t, "plimsoll.call GET /*", c.Name)
			assert.EqualValues(t, 200, ca["plimsoll.upstream_status"])
		}
	}
	assert.Equal(t, map[string]int{"forwarded": 9, "denied": 1}, outcomes)
	for _, s := range spans {
		for k, v := range attrs(s.Attributes) {
			text, _ := v.(string)
			for _, leak := range []string{"/item-", "/nope/x/y", "private-query", upstreamSecret, tokenA, tokenB} {
				assert.NotContains(t, text, leak, "span %s attribute %s", s.Name, k)
			}
		}
		assert.NotContains(t, s.Name, "/item-")
	}

	// The traced profile's forwarded calls carried the run span's traceparent; petstore's none.
	seen := up.seen()
	require.Len(t, seen, 10)
	want := "00-" + agentTrace + "-" + hex.EncodeToString(runSpan.SpanId) + "-01"
	for _, tp := range seen[:9] {
		assert.Equal(t, want, tp)
	}
	assert.Empty(t, seen[9], "a profile without propagate_trace sends no traceparent")
}

// With tracing off (no OTEL_* endpoint) no span is made, and a profile with propagate_trace passes
// the agent's valid traceparent on unchanged.
func TestTracingOffPassesTheAgentsTraceparent(t *testing.T) {
	up := newHeaderLog(t)
	d := start(t, up.upstream, withTracedProfile(up.URL))
	for _, tp := range []string{agentParent, "00-zz-not-a-traceparent-01", ""} {
		resp, b := d.do("POST", "/v1/runs", tokenB, run("traced", `await api.get("/item-1"); return 1;`), "Traceparent", tp)
		require.Equal(t, 200, resp.StatusCode, string(b))
	}
	assert.Equal(t, []string{agentParent, "", ""}, up.seen(), "valid: passed on; invalid or none: nothing")
}

func TestMCPMetaTraceparent(t *testing.T) {
	rc := newOTLPReceiver(t)
	up := newHeaderLog(t)
	d := start(t, up.upstream, withTracedProfile(up.URL), withEnv(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rc.URL + "/v1/traces"}))
	cs, _ := connectMCP(t, d, tokenB, "tracing-agent")
	params := &mcp.CallToolParams{Name: "run_traced", Arguments: map[string]any{"code": `await api.get("/item-1"); return 1;`}}
	params.Meta = mcp.Meta{"traceparent": agentParent}
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	cs.Close()
	require.NoError(t, d.shutdown())
	var found bool
	for _, s := range rc.all() {
		if s.Name == "plimsoll.run" {
			found = true
			assert.Equal(t, agentTrace, hex.EncodeToString(s.TraceId))
			assert.Equal(t, agentSpan, hex.EncodeToString(s.ParentSpanId))
		}
	}
	assert.True(t, found, "the MCP run's span was exported")
	require.Len(t, up.seen(), 1)
	assert.Contains(t, up.seen()[0], agentTrace)
}

func TestTracingConfigRefusals(t *testing.T) {
	up := newHeaderLog(t)
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
	} {
		dir := t.TempDir()
		writeProfile(t, dir, "p", up.URL, "")
		err := server.Run(context.Background(), server.Config{ProfilesDir: dir, Listen: "127.0.0.1:0", Admin: "off",
			Getenv: envOf(env), CacheDir: t.TempDir()})
		var ce *server.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, ce.Error(), "OTEL_")
	}
}
