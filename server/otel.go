package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// OpenTelemetry: one span per run and one child span per call (and per probe), exported over
// OTLP/HTTP when the standard OTEL_* environment asks for it. Off by default: with no
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or with OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none, the daemon builds no SDK and a run does no tracing work.
// Spans name route patterns, never raw paths or query strings, and carry no secret.

const tracerName = "github.com/plimsoll/plimsoll/server"

// tracing is the daemon's tracer; nil when off.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// newTracing builds the exporter from the OTEL_* environment, or returns nil when tracing is off.
// Other OTEL_* variables (headers, timeout, compression, sampler, batch delays) are read by the
// SDK from the process environment.
func newTracing(ctx context.Context, getenv func(string) string) (*tracing, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return nil, nil
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint == "" && base != "" {
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	if endpoint == "" {
		return nil, nil
	}
	if exp := getenv("OTEL_TRACES_EXPORTER"); exp != "" && exp != "otlp" {
		return nil, &ConfigError{Flag: "OTEL_TRACES_EXPORTER", Reason: fmt.Sprintf("%q: the daemon exports otlp (or none)", exp)}
	}
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, &ConfigError{Flag: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Reason: fmt.Sprintf("%q: the daemon speaks http/protobuf", p)}
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, &ConfigError{Flag: "OTEL_EXPORTER_OTLP_ENDPOINT", Reason: err.Error()}
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "plimsoll"
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
	return &tracing{provider: tp, tracer: tp.Tracer(tracerName)}, nil
}

// shutdown exports what is left, within the drain's patience.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return t.provider.Shutdown(ctx)
}

var traceContext = propagation.TraceContext{}

// remoteParent reads a W3C traceparent; an invalid one is ignored, as the standard says.
func remoteParent(traceparent string) context.Context {
	if traceparent == "" {
		return context.Background()
	}
	return traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
}

// tracedRun is one run's span, begun before the run and ended with its result.
type tracedRun struct {
	t     *tracing
	ctx   context.Context
	span  trace.Span
	start time.Time // the broker's start, which the trace's t_ms count from
}

// beginRun starts the run's span as a child of the agent's traceparent (if valid), and sets the
// traceparent the run's forwarded calls carry when the profile allows: the run span's when
// tracing is on, else the agent's own, unchanged.
func (s *Server) beginRun(opts *host.RunOptions, traceparent, profile, client, digest string) *tracedRun {
	if s.tracing == nil {
		if traceparent != "" && trace.SpanContextFromContext(remoteParent(traceparent)).IsValid() {
			opts.TraceParent = traceparent
		}
		return nil
	}
	ctx, span := s.tracing.tracer.Start(remoteParent(traceparent), "plimsoll.run",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("plimsoll.run_id", opts.RunID), attribute.String("plimsoll.profile", profile),
			attribute.String("plimsoll.client", client), attribute.String("plimsoll.tool_digest", digest)))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	opts.TraceParent = carrier["traceparent"]
	tr := &tracedRun{t: s.tracing, ctx: ctx, span: span, start: time.Now()}
	watch := opts.Watch
	opts.Watch = func(v host.LiveRun) {
		tr.start = v.State().Start
		if watch != nil {
			watch(v)
		}
	}
	return tr
}

// end records the run's calls and probes as child spans, its breaker's transitions as events,
// and its audit counters, then ends the run's span.
func (tr *tracedRun) end(res host.Result) {
	if tr == nil {
		return
	}
	a := res.Audit
	for _, e := range res.Trace {
		tr.call(e)
	}
	for _, e := range res.BreakerEvents {
		tr.breakerEvent(e)
	}
	tr.span.SetAttributes(attribute.String("plimsoll.status", string(a.Status)),
		attribute.Int("plimsoll.host_calls", a.HostCalls), attribute.Int("plimsoll.host_calls_forwarded", a.Forwarded),
		attribute.Int("plimsoll.host_calls_shed", a.Shed), attribute.Int("plimsoll.host_calls_denied", a.Denied),
		attribute.Int("plimsoll.host_calls_over_budget", a.OverBudget), attribute.Int("plimsoll.host_calls_invalid", a.Invalid),
		attribute.Int("plimsoll.host_calls_failed", a.Failed), attribute.Int("plimsoll.probes", a.Probes),
		attribute.Int("plimsoll.probes_ok", a.ProbesOK), attribute.Int("plimsoll.breaker_opens", a.BreakerOpens),
		attribute.Int("plimsoll.budget_calls", a.BudgetCalls))
	if a.Status != broker.StatusOK {
		tr.span.SetStatus(codes.Error, string(a.Status)) // the status only: the error text may quote the tool
	}
	tr.span.End(trace.WithTimestamp(tr.start.Add(time.Duration(a.DurationMs) * time.Millisecond)))
}

func (tr *tracedRun) at(ms float64) time.Time {
	return tr.start.Add(time.Duration(ms * float64(time.Millisecond)))
}

// call is one trace entry as a child span: its route pattern, never its raw path.
func (tr *tracedRun) call(e broker.TraceEntry) {
	route := e.Route
	if route == "" {
		route = "(no granted route)"
	}
	_, span := tr.t.tracer.Start(tr.ctx, "plimsoll.call "+route, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(tr.at(float64(e.TMs))), trace.WithAttributes(
			attribute.Int("plimsoll.seq", e.Seq), attribute.String("http.request.method", e.Method),
			attribute.String("http.route", e.Route), attribute.String("plimsoll.outcome", string(e.Outcome)),
			attribute.Int("http.response.status_code", e.Status), attribute.Int("plimsoll.upstream_status", e.UpstreamStatus),
			attribute.String("plimsoll.breaker", breakerAt(e)), attribute.String("plimsoll.probe", e.Probe)))
	if e.Outcome == broker.Failed {
		span.SetStatus(codes.Error, string(e.Outcome))
	}
	span.End(trace.WithTimestamp(tr.at(float64(e.TMs) + e.LatencyMs)))
}

// breakerAt says what the breaker was doing to a call: closed (a call the per-API limit shed
// too), open (it shed the call), forced open by the operator, or probed (picked to probe).
func breakerAt(e broker.TraceEntry) string {
	switch {
	case e.Probe != "":
		return "probed"
	case e.Outcome == broker.Shed && (strings.HasPrefix(e.Reason, broker.ForcedOpenReason) || strings.HasPrefix(e.Reason, broker.ForcedRouteReason)):
		return "forced_open"
	case e.Outcome == broker.Shed && strings.HasPrefix(e.Reason, "API limit:"):
		return "closed" // shed by the per-API limit, not by the breaker
	case e.Outcome == broker.Shed:
		return "open"
	}
	return "closed"
}

// breakerEvent is a probe as a child span, a transition as an event on the run's span.
func (tr *tracedRun) breakerEvent(e broker.BreakerEvent) {
	if e.Kind == broker.EventProbe {
		_, span := tr.t.tracer.Start(tr.ctx, "plimsoll.probe", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(tr.at(float64(e.TMs))), trace.WithAttributes(
				attribute.Int("http.response.status_code", e.Status), attribute.Bool("plimsoll.probe_ok", e.OK)))
		span.End(trace.WithTimestamp(tr.at(float64(e.TMs) + e.LatencyMs)))
		return
	}
	tr.span.AddEvent("breaker."+e.Kind, trace.WithTimestamp(tr.at(float64(e.TMs))), trace.WithAttributes(
		attribute.Int("http.response.status_code", e.Status), attribute.Int64("plimsoll.cooldown_ms", e.CooldownMs),
		attribute.Bool("plimsoll.clamped", e.Clamped), attribute.Bool("plimsoll.window_429", e.Window429)))
}

// traceparentOf reads the W3C traceparent of an HTTP request.
func traceparentOf(r *http.Request) string { return r.Header.Get("Traceparent") }
