package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/plimsoll/plimsoll/guests/examples"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

type demoFlags struct {
	status     int
	retryAfter string
	noHealth   bool
	tool       string
	input      string
	runs       int // demo --runs N: the API limit learning a knee (demoruns.go)
	seconds    int
	timeline   string
	trace      string
}

func cmdDemo(ctx context.Context, args []string, e env) int {
	var f demoFlags
	fs := newFlags("demo", "plimsoll-run demo [--status 503|429] [--retry-after SECONDS|none] [--no-health] [--tool FILE [--input JSON|@FILE]] [--timeline FILE.svg|.html] [--trace FILE]\n       plimsoll-run demo --runs N [--seconds S]", e)
	fs.IntVar(&f.status, "status", 503, "what the overloaded API answers: 503 or 429")
	fs.StringVar(&f.retryAfter, "retry-after", "5", "the overloaded API's Retry-After in `SECONDS`, or none")
	fs.BoolVar(&f.noHealth, "no-health", false, "leave health_check out of the demo profile")
	fs.StringVar(&f.tool, "tool", "", "run this tool `FILE` (.js, a wasip1 .wasm, or an Extism plugin .wasm) against the calm demo API instead of the overload chart")
	fs.StringVar(&f.input, "input", "", "input for --tool: `JSON` or @FILE")
	fs.IntVar(&f.runs, "runs", 0, "run `N` tools at once against an API with a knee of 16, behind an adaptive limit")
	fs.IntVar(&f.seconds, "seconds", 6, "how long each of the --runs tools calls, in `S` seconds")
	fs.StringVar(&f.timeline, "timeline", "", "also draw the run's chart to `FILE` (.svg or .html)")
	fs.StringVar(&f.trace, "trace", "", "write the run's call trace as JSON lines to `FILE`")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := f.check(); err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	if f.runs > 0 {
		return demoRuns(ctx, f, e)
	}
	if f.retryAfter == "none" {
		f.retryAfter = ""
	}
	api := newDemoAPI(f.tool == "", f.status, f.retryAfter)
	srv, baseURL, err := serveLoopback(api)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	defer srv.Close()
	profile, err := demoProfile(baseURL, !f.noHealth)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	getenv := demoGetenv(e)
	rt, err := host.New(ctx, host.Options{Getenv: getenv})
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	defer rt.Close(context.Background())
	if f.tool != "" {
		return demoTool(ctx, rt, profile, f, e)
	}
	return demoChart(ctx, rt, profile, f, e)
}

func (f demoFlags) check() error {
	if f.status != 503 && f.status != 429 {
		return fmt.Errorf("--status %d: the demo overloads with 503 or 429", f.status)
	}
	if f.retryAfter != "none" {
		if n, err := strconv.Atoi(f.retryAfter); err != nil || n < 0 {
			return fmt.Errorf("--retry-after %q: want whole seconds or none", f.retryAfter)
		}
	}
	if f.input != "" && f.tool == "" {
		return fmt.Errorf("--input goes with --tool")
	}
	if f.runs < 0 || f.runs > 1000 || (f.runs > 0 && f.tool != "") {
		return fmt.Errorf("--runs %d: want 1 to 1000 runs, and no --tool", f.runs)
	}
	if f.seconds < 1 || f.seconds > 300 {
		return fmt.Errorf("--seconds %d: want 1 to 300", f.seconds)
	}
	if (f.timeline != "" || f.trace != "") && f.runs > 0 {
		return fmt.Errorf("--timeline and --trace record one run: the chart or --tool, not --runs")
	}
	if f.timeline != "" {
		_, err := timelineWriter(f.timeline)
		return err
	}
	return nil
}

// demoChart runs the overload example and draws seed 000's chart from its trace.
func demoChart(ctx context.Context, rt *host.Runtime, p *profiles.Profile, f demoFlags, e env) int {
	src, err := examples.FS.ReadFile("overload.js")
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	res := runShowing(ctx, rt, host.JSTool("overload.js", string(src)), p, []byte("null"), e)
	ra := "no Retry-After"
	if f.retryAfter != "" {
		ra = "Retry-After: " + f.retryAfter
	}
	health := "health_check GET /status"
	if f.noHealth {
		health = "no health_check"
	}
	title := fmt.Sprintf("plimsoll demo: one call every 100 ms for 8 s. The API answers %d (%s) from 0.5 s to 2.2 s; the profile has %s.",
		f.status, ra, health)
	tl := timeline{w: e.stdout, color: e.isTTY && e.getenv("NO_COLOR") == "", slots: 80}
	tl.draw(title, res.Trace, int(demoOverloadFrom/1e8), int(demoHealAt/1e8), res.Audit)
	if f.timeline != "" {
		if err := writeTimelineFile(f.timeline, res); err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run demo: timeline: %v\n", err)
			return exitTool
		}
	}
	if f.trace != "" {
		if err := writeTraceFile(f.trace, res.Trace); err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run demo: trace: %v\n", err)
			return exitTool
		}
	}
	if res.Err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: the overload tool failed: %v\n%s", res.Err, res.Log)
		return exitTool
	}
	return exitOK
}

// demoTool runs any JS tool against the calm demo API, like `run` would.
func demoTool(ctx context.Context, rt *host.Runtime, p *profiles.Profile, f demoFlags, e env) int {
	tool, err := readTool(f.tool, e.stdin)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	input, err := readInput(f.input)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	return report(runShowing(ctx, rt, tool, p, input, e), runFlags{timeline: f.timeline, trace: f.trace}, e)
}

const demoTokenEnv = "PLIMSOLL_DEMO_TOKEN"

// demoProfile writes the demo's grant profile to a temporary directory and loads it, so the demo
// goes through exactly the loader a real profile does.
func demoProfile(baseURL string, health bool) (*profiles.Profile, error) {
	dir, err := os.MkdirTemp("", "plimsoll-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	text := fmt.Sprintf(`base_url: %s/v1
credential:
  header: Authorization
  scheme: Bearer
  env: %s
routes:
  - GET /items
  - GET /items/*
  - POST /items
budget:
  calls: 200
`, baseURL, demoTokenEnv)
	if health {
		text += "health_check: GET /status\n"
	}
	path := filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return nil, err
	}
	return profiles.LoadFile(path)
}

// serveLoopback serves h on 127.0.0.1 at a random port.
func serveLoopback(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}

// demoGetenv is the environment the demo's runs see: the demo API's token, and e's otherwise.
func demoGetenv(e env) func(string) string {
	return func(k string) string {
		if k == demoTokenEnv {
			return demoToken
		}
		return e.getenv(k)
	}
}
