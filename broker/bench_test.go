package broker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// realisticRoutes is a 20-route grant in the shape real profiles take.
const realisticRoutes = `routes:
  - GET /health
  - GET /me
  - GET /pets
  - POST /pets
  - GET /pets/*
  - PUT /pets/*
  - DELETE /pets/*
  - GET /pets/*/photos
  - POST /pets/*/photos
  - GET /owners
  - GET /owners/*
  - GET /owners/*/pets
  - GET /stores
  - GET /stores/*
  - GET /stores/*/inventory
  - POST /stores/*/orders
  - GET /stores/*/orders/*
  - DELETE /stores/*/orders/*
  - GET /stores/*/orders/*/items
  - GET /stores/*/orders/*/items/*
`

// BenchmarkGrantMatch: Profile.Match over 20 routes, matching the last one. Goal: ≤ 300 ns.
func BenchmarkGrantMatch(b *testing.B) {
	p := writeProfile(b, "http://127.0.0.1:1", realisticRoutes)
	if len(p.Routes) != 20 {
		b.Fatalf("%d routes", len(p.Routes))
	}
	const path = "/stores/17/orders/4021/items/3"
	b.ReportAllocs()
	for b.Loop() {
		r, ok := p.Match("GET", path)
		if !ok || r != &p.Routes[19] {
			b.Fatal("no match")
		}
	}
}

// BenchmarkShedCall: a whole Broker.Call that the open breaker sheds (validate, grant, breaker,
// answer, trace entry). The breaker's own decision is benchmarked in breaker/.
func BenchmarkShedCall(b *testing.B) {
	rt := rtFunc(func(*http.Request) (*http.Response, error) {
		return inMemReply(503, "", "Retry-After", "30"), nil
	})
	p := writeProfile(b, "http://api.test", realisticRoutes)
	ctx := context.Background()
	req := broker.Request{Method: "GET", Path: "/stores/17/orders/4021/items/3",
		Headers: http.Header{"Accept": {"application/json"}}}
	// openRun starts a run whose breaker is open for the next 30 s. A run makes at most
	// max_host_calls calls, so the benchmark moves to a fresh one after that many: one run of
	// millions of calls would mostly time the growth of its own trace.
	var run *broker.Broker
	calls := 0
	openRun := func() {
		run, calls = newRun(b, p, rt), 1
		if resp := run.Call(ctx, req); resp.Status != 503 {
			b.Fatal(resp.Status)
		}
	}
	openRun()
	b.ReportAllocs()
	for b.Loop() {
		if calls++; calls > p.Limits.MaxHostCalls {
			openRun()
		}
		if resp := run.Call(ctx, req); resp.Status != http.StatusServiceUnavailable || resp.Headers[broker.OutcomeHeader][0] != "shed" {
			b.Fatal("not shed")
		}
	}
}

// BenchmarkForwardVsDirect alternates a direct call and a brokered call to one loopback server
// over one http.Transport, both reading the whole body, and times each side on its own. Goal:
// forwarded/direct ≤ 1.10.
func BenchmarkForwardVsDirect(b *testing.B) {
	body := `{"id":42,"name":"Rex","tags":["a","b"],"owner":{"id":7,"name":"Ann"},"notes":"` +
		strings.Repeat("x", 400) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	defer tr.CloseIdleConnections()

	p := writeProfile(b, srv.URL+"/v1", realisticRoutes+"budget:\n  calls: 1000\n")
	newRun := func() *broker.Broker {
		run, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		return run
	}
	run := newRun()
	ctx := context.Background()
	guest := broker.Request{Method: "GET", Path: "/pets/42", Query: "fields=all",
		Headers: http.Header{"Accept": {"application/json"}}}
	direct := func() {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/pets/42?fields=all", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set(credHeader, credScheme+" "+secret)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(got) != len(body) {
			b.Fatal("short body", err)
		}
	}
	calls := 0
	forwarded := func() {
		calls++
		resp := run.Call(ctx, guest)
		if resp.Status != 200 || len(resp.Body) != len(body) {
			b.Fatal(resp.Status, string(resp.Body))
		}
	}
	direct() // warm the connection
	forwarded()

	var dDirect, dForwarded time.Duration
	var perDirect, perForwarded []time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if calls == p.Budget.Calls {
			// Untimed: a run makes at most max_host_calls (here budget) calls, and one run of
			// millions would mostly time the growth and GC scanning of its own trace.
			run, calls = newRun(), 0
		}
		t0 := time.Now()
		direct()
		t1 := time.Now()
		forwarded()
		t2 := time.Now()
		dDirect += t1.Sub(t0)
		dForwarded += t2.Sub(t1)
		perDirect, perForwarded = append(perDirect, t1.Sub(t0)), append(perForwarded, t2.Sub(t1))
		n++
	}
	d, f := float64(dDirect.Nanoseconds())/float64(n), float64(dForwarded.Nanoseconds())/float64(n)
	b.ReportMetric(d, "direct-ns/op")
	b.ReportMetric(f, "forwarded-ns/op")
	b.ReportMetric(f/d, "ratio")
	// Medians shrug off the odd preempted call on a busy machine.
	b.ReportMetric(float64(median(perForwarded))/float64(median(perDirect)), "median-ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkForwardInMemory is the broker's own cost of a forwarded call: an in-memory upstream
// answers at once, so what is timed is validation, grant, breaker, budget, request building,
// reading, redaction and recording.
func BenchmarkForwardInMemory(b *testing.B) {
	body := strings.Repeat("x", 512)
	rt := rtFunc(func(*http.Request) (*http.Response, error) {
		return inMemReply(200, body, "Content-Type", "application/json", "Date", "Mon, 01 Jan 2024 00:00:00 GMT"), nil
	})
	p := writeProfile(b, "http://api.test/v1", realisticRoutes+"budget:\n  calls: 1000\n")
	run := newRun(b, p, rt)
	ctx := context.Background()
	guest := broker.Request{Method: "GET", Path: "/pets/42", Query: "fields=all",
		Headers: http.Header{"Accept": {"application/json"}}}
	calls := 0
	b.ReportAllocs()
	for b.Loop() {
		if calls++; calls > p.Budget.Calls {
			run, calls = newRun(b, p, rt), 1 // a run makes at most max_host_calls calls
		}
		if resp := run.Call(ctx, guest); resp.Status != 200 {
			b.Fatal(resp.Status)
		}
	}
}

// BenchmarkForwardHeadersAndRedaction is the cost of the request-header allow-list and of
// redaction per forwarded call (issue 9): the same call with four allowed headers, against the
// same run without a secret (nothing to redact: the baseline) and with one (every encoded form
// searched), for a small and a large JSON body.
func BenchmarkForwardHeadersAndRedaction(b *testing.B) {
	guest := broker.Request{Method: "GET", Path: "/pets/42", Query: "fields=all", Headers: http.Header{
		"Accept": {"application/json"}, "User-Agent": {"tool/1"}, "If-None-Match": {`"e1"`}, "Accept-Language": {"en"}}}
	for _, size := range []int{512, 64 << 10} {
		body := strings.Repeat(`{"id":42,"name":"Rex","url":"https:\/\/a.test\/p%20q"},`, size/54+1)[:size]
		rt := rtFunc(func(*http.Request) (*http.Response, error) {
			return inMemReply(200, body, "Content-Type", "application/json", "Location", "https://a.test/x?y=%2F"), nil
		})
		p := writeProfile(b, "http://api.test/v1", realisticRoutes+"budget:\n  calls: 1000\n")
		for _, withSecret := range []bool{false, true} {
			name := fmt.Sprintf("body=%dB/secret=%v", size, withSecret)
			b.Run(name, func(b *testing.B) {
				newRun := func() *broker.Broker {
					cfg := broker.Config{Profile: p, Transport: rt}
					if withSecret {
						cfg.Secret = profiles.NewSecret(secret)
					}
					run, err := broker.New(cfg)
					if err != nil {
						b.Fatal(err)
					}
					return run
				}
				run, calls, ctx := newRun(), 0, context.Background()
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					if calls++; calls > p.Budget.Calls {
						run, calls = newRun(), 1
					}
					if resp := run.Call(ctx, guest); resp.Status != 200 {
						b.Fatal(resp.Status)
					}
				}
			})
		}
	}
}
