package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
)

var (
	runnerOnce sync.Once
	runner     *Runner
	runnerErr  error
)

// sharedRunner is one Runner (one host runtime) for every test of the package.
func sharedRunner(t *testing.T) *Runner {
	t.Helper()
	runnerOnce.Do(func() { runner, runnerErr = New(context.Background(), Options{Parallel: 2}) })
	require.NoError(t, runnerErr)
	return runner
}

func TestMain(m *testing.M) {
	// Share one wazero compilation cache across the test packages of a run.
	os.Setenv("PLIMSOLL_CACHE_DIR", testcache.Dir())
	code := m.Run()
	if runner != nil {
		if err := runner.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func v1Scenarios(t *testing.T, names ...string) []*Scenario {
	t.Helper()
	all, err := V1()
	require.NoError(t, err)
	if len(names) == 0 {
		return all
	}
	var out []*Scenario
	for _, name := range names {
		found := false
		for _, s := range all {
			if s.Name == name {
				out, found = append(out, s), true
			}
		}
		require.True(t, found, "no scenario %q", name)
	}
	return out
}

// Every built-in preamble passes every scenario of every ABI version it speaks, and skips,
// saying so, only those of a later version.
func TestBuiltinDriversPassEveryScenario(t *testing.T) {
	r := sharedRunner(t)
	scenarios, err := Builtin()
	require.NoError(t, err)
	for _, lang := range Languages {
		t.Run(lang, func(t *testing.T) {
			t.Parallel() // most of the time is sleeps in overload scenarios
			d, err := BuiltinDriver(lang)
			require.NoError(t, err)
			rep := r.Run(context.Background(), d, scenarios)
			for _, res := range rep.Results {
				switch {
				case res.Skipped != "":
					assert.Greater(t, res.ABI, d.abi(), "%s: %s skipped: %s", lang, res.Scenario, res.Skipped)
				case !res.Pass:
					t.Errorf("%s: %s\n  %s\n  driver log:\n%s", lang, res.Scenario, strings.Join(res.Differences, "\n  "), res.Log)
				}
			}
			for _, res := range rep.Results {
				if res.DurationMs > 2000 {
					t.Logf("slow: %s %dms", res.Scenario, res.DurationMs)
				}
			}
			assert.Equal(t, len(scenarios), rep.Passed+rep.Skipped)
			if d.abi() >= 2 {
				assert.Zero(t, rep.Skipped, "a v2 driver runs every scenario")
			}
			t.Logf("%s: %d scenarios in %.1fs", lang, len(scenarios), float64(rep.DurationMs)/1000)
		})
	}
}

// The suite can fail: deliberately broken drivers fail exactly the scenarios that exercise their
// bug, with readable differences, and pass the others.
func TestBrokenDriversFail(t *testing.T) {
	r := sharedRunner(t)
	scenarios := v1Scenarios(t, "query-arrays", "query-raw", "shed-after-503", "forwarded-json")
	cases := []struct {
		driver string
		failed map[string][]string // scenario → its differences, in order
	}{
		{"drops-query-arrays", map[string][]string{
			"query-arrays": {`received[0] (GET /items): query tag: expected ["red", "blue", "green"], observed ["red"] (raw query "tag=red&limit=5")`},
		}},
		{"shed-is-success", map[string][]string{
			"shed-after-503": {
				`operations[1] (GET /items): outcome: expected "shed", observed "forwarded"`,
				`operations[1] (GET /items): ok: expected false, observed true`,
				`operations[2] (GET /orders): outcome: expected "shed", observed "forwarded"`,
				`operations[2] (GET /orders): ok: expected false, observed true`,
			},
		}},
	}
	for _, c := range cases {
		t.Run(c.driver, func(t *testing.T) {
			d := brokenJSDriver(t, c.driver)
			rep := r.Run(context.Background(), d, scenarios)
			assert.False(t, rep.OK())
			for _, res := range rep.Results {
				want := c.failed[res.Scenario]
				assert.Equal(t, want == nil, res.Pass, "%s: %v", res.Scenario, res.Differences)
				assert.Equal(t, want, res.Differences, res.Scenario)
			}
			var table strings.Builder
			require.NoError(t, WriteTable(&table, rep))
			for name, diffs := range c.failed {
				assert.Contains(t, table.String(), name)
				assert.Contains(t, table.String(), "FAIL")
				assert.Contains(t, table.String(), diffs[0], "the table shows the first difference")
			}
			t.Logf("\n%s", table.String())
		})
	}
}

// The v2 scenarios can fail: a driver that performs a concurrent group one call after another
// fails exactly those that need calls to overlap.
func TestSequentialDriverFailsTheOverlapScenarios(t *testing.T) {
	r := sharedRunner(t)
	scenarios, err := V2()
	require.NoError(t, err)
	d := brokenJSDriver(t, "sequential-concurrent")
	d.ABI = 2 // claim v2, so the runner does not skip
	rep := r.Run(context.Background(), d, scenarios)
	failed := map[string]bool{}
	for _, res := range rep.Results {
		if !res.Pass {
			failed[res.Scenario] = true
			require.NotEmpty(t, res.Differences, res.Scenario)
		}
	}
	assert.Equal(t, map[string]bool{"overlap": true, "inflight-cap": true, "taint-429": true}, failed)
	var table strings.Builder
	require.NoError(t, WriteTable(&table, rep))
	assert.Contains(t, table.String(), "overlap (v2)")
}

// A v1 driver is not run on v2 scenarios: the runner skips them and says why.
func TestV1DriverSkipsV2Scenarios(t *testing.T) {
	r := sharedRunner(t)
	scenarios, err := V2()
	require.NoError(t, err)
	d := brokenJSDriver(t, "sequential-concurrent") // ABI 0: speaks v1
	rep := r.Run(context.Background(), d, scenarios)
	assert.Equal(t, len(scenarios), rep.Skipped)
	assert.False(t, rep.OK(), "nothing passed")
	var table strings.Builder
	require.NoError(t, WriteTable(&table, rep))
	assert.Contains(t, table.String(), "skip    needs guest ABI v2; driver sequential-concurrent.js speaks v1")
	assert.Contains(t, table.String(), fmt.Sprintf("%d skipped", len(scenarios)))
}

// A driver that dies, prints something else, or skips operations fails with a difference that
// says so, never with a pass.
func TestDriverMisbehaviourIsADifference(t *testing.T) {
	r := sharedRunner(t)
	s := v1Scenarios(t, "forwarded-json")[0]
	dir := t.TempDir()
	cases := map[string]struct{ src, want string }{
		"throws":    {`throw new Error("driver bug")`, "the driver failed: tool failed: Uncaught Error: driver bug"},
		"not json":  {`return "hello"`, `the driver's output is not {"observations": [...]}`},
		"unknown":   {`return {observations: [], extra: 1}`, `unknown field "extra"`},
		"too few":   {`return {observations: []}`, "observations: expected 1 (one per operation), observed 0"},
		"no call":   {`return {observations: [{op: "call", status: 200, ok: true, outcome: "forwarded", headers: {}, body: ""}]}`, "received: expected 1 requests, observed 0; never received: GET /v1/items/42"},
		"error obs": {`return {observations: [{op: "call", error: "boom"}]}`, "operations[0] (GET /items/42): the preamble raised an error instead of answering: boom"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".js")
			require.NoError(t, os.WriteFile(path, []byte(c.src), 0o600))
			d, err := DriverFile(path)
			require.NoError(t, err)
			res := r.RunScenario(context.Background(), d, s)
			require.False(t, res.Pass)
			assert.Contains(t, strings.Join(res.Differences, "\n"), c.want)
		})
	}
}

func TestDriverFile(t *testing.T) {
	_, err := DriverFile("driver.txt")
	assert.ErrorIs(t, err, ErrDriverFile)
	_, err = DriverFile(filepath.Join(t.TempDir(), "missing.wasm"))
	assert.ErrorIs(t, err, ErrDriverFile)
	_, err = BuiltinDriver("cobol")
	assert.Error(t, err)
}

// brokenJSDriver is the built-in JS driver with one deliberate bug applied, from
// testdata/broken/NAME.bug: a description, then "--- replace" and the driver's lines to change,
// then "--- with" and what they become. Keeping only the change, not a copy of the driver, keeps
// the broken drivers in step with the real one; a change that no longer applies fails here.
func brokenJSDriver(t *testing.T, name string) Driver {
	t.Helper()
	bug, err := os.ReadFile(filepath.Join("testdata", "broken", name+".bug"))
	require.NoError(t, err)
	_, change, ok := strings.Cut(string(bug), "--- replace\n")
	require.True(t, ok, "%s.bug has no --- replace block", name)
	old, replacement, ok := strings.Cut(change, "--- with\n")
	require.True(t, ok, "%s.bug has no --- with block", name)
	require.Equal(t, 1, strings.Count(jsDriverSource, old), "%s.bug must change exactly one place in driver.js", name)
	return Driver{Name: name + ".js", Tool: host.JSTool(name+".js", strings.Replace(jsDriverSource, old, replacement, 1))}
}

// DriverFile takes a file of every extension host's kind table registers, and lists them when
// it refuses one.
func TestDriverFileTakesEveryRegisteredExtension(t *testing.T) {
	dir := t.TempDir()
	for _, k := range host.Kinds() {
		for _, ext := range k.Extensions() {
			path := filepath.Join(dir, "driver"+ext)
			require.NoError(t, os.WriteFile(path, []byte("1"), 0o600))
			d, err := DriverFile(path)
			require.NoError(t, err, ext)
			byExt, _ := host.KindFor(ext)
			assert.Equal(t, byExt.Name(), d.Tool.Kind(), ext)
		}
	}
	_, err := DriverFile("driver.txt")
	for _, k := range host.Kinds() {
		for _, ext := range k.Extensions() {
			assert.Contains(t, err.Error(), ext)
		}
	}
}
