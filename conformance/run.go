package conformance

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

//go:embed v1/*.yaml v2/*.yaml
var suites embed.FS

// V1 is the built-in suite for guest ABI v1: the scenarios of conformance/v1.
func V1() ([]*Scenario, error) { return LoadFS(suites, "v1") }

// V2 is the built-in suite for what ABI v2 adds, concurrent calls: the scenarios of
// conformance/v2. A v2 driver passes V1 too.
func V2() ([]*Scenario, error) { return LoadFS(suites, "v2") }

// Builtin is every built-in scenario, v1 then v2.
func Builtin() ([]*Scenario, error) {
	a, err := V1()
	if err != nil {
		return nil, err
	}
	b, err := V2()
	return append(a, b...), err
}

// LoadDir loads every scenario (*.yaml) of a directory on disk.
func LoadDir(dir string) ([]*Scenario, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	scenarios, err := LoadFS(os.DirFS(abs), ".")
	if err != nil {
		return nil, err
	}
	for _, s := range scenarios {
		s.File = filepath.Join(dir, s.File)
	}
	return scenarios, nil
}

// Options configure a Runner. The zero value is usable.
type Options struct {
	// CacheDir is the wazero compilation cache; "" means the host's default ($PLIMSOLL_CACHE_DIR,
	// else the user cache dir).
	CacheDir string
	// Parallel is how many scenarios run at once; 0 means 2. Scenarios never share an upstream or
	// a broker run, so the only cost of running them together is CPU.
	Parallel int
}

// tokenEnv names the credential every scenario's grant sends; the runner resolves it.
const tokenEnv = "PLIMSOLL_CONFORMANCE_TOKEN"

// Runner runs scenarios through the real host and broker, each against its own upstream on
// loopback.
type Runner struct {
	rt       *host.Runtime
	secret   string
	parallel int
}

// New builds a Runner. Close it to release the host runtime.
func New(ctx context.Context, opts Options) (*Runner, error) {
	r := &Runner{secret: "conformance-token-" + broker.NewRunID(), parallel: opts.Parallel}
	if r.parallel <= 0 {
		r.parallel = 2
	}
	rt, err := host.New(ctx, host.Options{CacheDir: opts.CacheDir, Getenv: func(k string) string {
		if k == tokenEnv {
			return r.secret
		}
		return ""
	}})
	if err != nil {
		return nil, err
	}
	r.rt = rt
	return r, nil
}

// Close releases the host runtime.
func (r *Runner) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// Result is how one scenario went.
type Result struct {
	Scenario    string   `json:"scenario"`
	File        string   `json:"file"`
	ABI         int      `json:"abi"` // the ABI version the scenario needs
	Pass        bool     `json:"pass"`
	Skipped     string   `json:"skipped,omitempty"`     // why it was not run: it needs an ABI the driver does not speak
	Differences []string `json:"differences,omitempty"` // in check order; the first is the first difference
	DurationMs  int64    `json:"duration_ms"`
	Log         string   `json:"log,omitempty"` // the driver's stderr, when the scenario failed
}

// Report is a driver's run over a set of scenarios.
type Report struct {
	Driver     string   `json:"driver"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
	Skipped    int      `json:"skipped"`
	DurationMs int64    `json:"duration_ms"`
	Results    []Result `json:"results"`
}

// OK reports whether every scenario passed.
func (rep Report) OK() bool { return rep.Failed == 0 && rep.Passed > 0 }

// Run runs every scenario with driver d and returns the results in scenario order.
func (r *Runner) Run(ctx context.Context, d Driver, scenarios []*Scenario) Report {
	start := time.Now()
	results := make([]Result, len(scenarios))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(r.parallel, len(scenarios)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = r.RunScenario(ctx, d, scenarios[i])
			}
		}()
	}
	for i := range scenarios {
		next <- i
	}
	close(next)
	wg.Wait()
	rep := Report{Driver: d.Name, Results: results, DurationMs: time.Since(start).Milliseconds()}
	for _, res := range results {
		switch {
		case res.Skipped != "":
			rep.Skipped++
		case res.Pass:
			rep.Passed++
		default:
			rep.Failed++
		}
	}
	return rep
}

// RunScenario runs one scenario with driver d: it starts the scenario's upstream, loads its
// grant as a profile, runs the driver with the operations as input, and compares.
func (r *Runner) RunScenario(ctx context.Context, d Driver, s *Scenario) Result {
	start := time.Now()
	res := Result{Scenario: s.Name, File: s.File, ABI: s.ABI()}
	if res.ABI > d.abi() {
		res.Skipped = fmt.Sprintf("needs guest ABI v%d; driver %s speaks v%d", res.ABI, d.Name, d.abi())
		return res
	}
	res.Differences, res.Log = r.runScenario(ctx, d, s)
	res.Pass = len(res.Differences) == 0
	if res.Pass {
		res.Log = ""
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res
}

func (r *Runner) runScenario(ctx context.Context, d Driver, s *Scenario) (diffs []string, log string) {
	if err := ctx.Err(); err != nil {
		return []string{"not run: " + err.Error()}, ""
	}
	up, err := startUpstream(s.Upstream)
	if err != nil {
		return []string{"setup: start the upstream: " + err.Error()}, ""
	}
	defer up.close()
	p, err := loadGrant(s, up.url)
	if err != nil {
		return []string{"setup: the scenario's grant is not a valid profile: " + err.Error()}, ""
	}
	run := r.rt.Run(ctx, d.Tool, p, s.driverInput())
	return compare(s, run, up.requests(), r.secret), redact(string(run.Log), r.secret)
}

// loadGrant writes the scenario's grant as a profile file and loads it, so the grant goes through
// exactly the loader a real profile does.
func loadGrant(s *Scenario, upstreamURL string) (*profiles.Profile, error) {
	limits := map[string]any{"max_output_bytes": "64MiB"} // observations repeat every body
	for k, v := range s.Grant.Limits {
		if n, err := strconv.Atoi(v); err == nil {
			limits[k] = n // a count, as a profile file writes it
		} else {
			limits[k] = v
		}
	}
	doc := map[string]any{
		"base_url":   upstreamURL + basePath,
		"credential": map[string]string{"scheme": "Bearer", "env": tokenEnv},
		"routes":     s.Grant.Routes,
		"limits":     limits,
	}
	if len(s.Grant.RequestHeaders) > 0 {
		doc["request_headers"] = s.Grant.RequestHeaders
	}
	if s.Grant.HealthCheck != "" {
		doc["health_check"] = s.Grant.HealthCheck
	}
	if s.Grant.Budget > 0 {
		doc["budget"] = map[string]int{"calls": s.Grant.Budget}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "plimsoll-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, s.Name+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return profiles.LoadFile(path)
}

// Check loads every scenario's grant against a placeholder upstream, so a broken grant is found
// before anything runs.
func Check(scenarios []*Scenario) error {
	for _, s := range scenarios {
		if _, err := loadGrant(s, "http://127.0.0.1:9"); err != nil {
			return fmt.Errorf("%s: grant: %w", s.File, err)
		}
	}
	return nil
}

var _ fs.FS = suites
