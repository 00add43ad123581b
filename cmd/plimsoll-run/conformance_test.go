package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConformanceCommand(t *testing.T) {
	env := map[string]string{"PLIMSOLL_CACHE_DIR": os.Getenv("PLIMSOLL_CACHE_DIR")}

	code, stdout, stderr := invoke(t, "", env, "conformance", "--run", "^(forwarded-json|shed-after-503)$")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "forwarded-json  pass")
	assert.Contains(t, stdout, "driver js: 2 scenarios, 2 passed, 0 failed")
	assert.Contains(t, stdout, "driver go: 2 scenarios, 2 passed, 0 failed")
	assert.Contains(t, stdout, "driver extism-go: 2 scenarios, 2 passed, 0 failed")
	assert.Contains(t, stderr, "plimsoll-run conformance: driver js (1 of 4): running 2 scenarios, 2 at once\n", "progress on stderr")
	assert.Contains(t, stdout, "driver python: 2 scenarios, 2 passed, 0 failed")

	broken := writeBrokenDriver(t)
	code, stdout, stderr = invoke(t, "", env, "conformance", "--guest", broken, "--run", "^query-arrays$")
	assert.Equal(t, 1, code, "a failed scenario exits 1; stderr: %s", stderr)
	assert.Contains(t, stdout, `query-arrays  FAIL    received[0] (GET /items): query tag: expected ["red", "blue", "green"], observed ["red"]`)
	assert.Contains(t, stdout, "driver drops-query-arrays.js: 1 scenarios, 0 passed, 1 failed")

	code, stdout, _ = invoke(t, "", env, "conformance", "--lang", "go", "--run", "^query-arrays$", "--json")
	require.Equal(t, 0, code)
	var doc struct {
		OK      bool `json:"ok"`
		Drivers []struct {
			Driver  string `json:"driver"`
			Results []struct {
				Scenario string `json:"scenario"`
				Pass     bool   `json:"pass"`
			} `json:"results"`
		} `json:"drivers"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.True(t, doc.OK)
	require.Len(t, doc.Drivers, 1)
	assert.Equal(t, "go", doc.Drivers[0].Driver)
	assert.True(t, doc.Drivers[0].Results[0].Pass)
}

func TestConformanceUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lang", "js", "--guest", "x.wasm"}, "give --lang or --guest, not both"},
		{[]string{"--lang", "cobol"}, `no built-in driver for "cobol"`},
		{[]string{"--guest", "driver.txt"}, "want a .js, .py or .wasm file"},
		{[]string{"--scenarios", "/no/such/dir"}, "no such file"},
		{[]string{"--run", "^nothing$"}, "matches no scenario"},
		{[]string{"--run", "("}, "--run: error parsing regexp"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := invoke(t, "", nil, append([]string{"conformance"}, c.args...)...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// writeBrokenDriver writes the built-in JS driver with one bug, the one in
// conformance/testdata/broken/drops-query-arrays.bug: it sends only the first value of a query
// array. It is a driver file an outside author could have written.
func writeBrokenDriver(t *testing.T) string {
	t.Helper()
	src := readFile(t, filepath.Join("..", "..", "conformance", "drivers", "js", "driver.js"))
	broken := strings.Replace(src, "opts.query = op.query;", `opts.query = typeof op.query !== "object" ? op.query :
      Object.fromEntries(Object.entries(op.query).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]));`, 1)
	require.NotEqual(t, src, broken, "driver.js no longer has the line the bug changes")
	return writeFile(t, t.TempDir(), "drops-query-arrays.js", broken)
}
