package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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

func TestMain(m *testing.M) {
	// Share one wazero compilation cache across the test packages of a run.
	os.Setenv("PLIMSOLL_CACHE_DIR", testcache.Dir())
	if os.Getenv(reexecEnv) == "1" { // the serve tests run the real command as a subprocess
		main()
	}
	os.Exit(m.Run())
}

const secret = "sk-cli-test-9f8e7d"

// invoke runs the CLI in-process and returns its exit code, stdout and stderr.
func invoke(t *testing.T, stdin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env_(stdin, &out, &errb, env)
	code := cli(context.Background(), args, e)
	return code, out.String(), errb.String()
}

func env_(stdin string, out, errb *bytes.Buffer, vars map[string]string) env {
	return env{stdin: strings.NewReader(stdin), stdout: out, stderr: errb,
		getenv: func(k string) string {
			if v, ok := vars[k]; ok || k != host.EnvCacheDir {
				return v
			}
			return testcache.Dir() // the run's shared compilation cache, as before the env was read through getenv
		}}
}

// recorder is a loopback upstream that remembers every request it received.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.RequestURI+" auth="+req.Header.Get("Authorization"))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q}`, strings.TrimPrefix(req.URL.Path, "/v1/pets/"))
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func writeProfile(t *testing.T, dir, name, baseURL string) {
	t.Helper()
	text := "base_url: " + baseURL + "/v1\ncredential:\n  scheme: Bearer\n  env: PETS_TOKEN\nroutes:\n  - GET /pets/*\nbudget:\n  calls: 5\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(text), 0o600))
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestRunEndToEnd(t *testing.T) {
	up := &recorder{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	dir := t.TempDir()
	writeProfile(t, dir, "pets", srv.URL)
	tool := writeFile(t, dir, "fetch.js", `
const pet = await api.get("/pets/" + input.id);
const denied = await api.post("/pets/7", {name: "x"});
const invalid = await api.get("/pets/../admin");
console.log("fetched", pet.status);
return {pet: pet.json(), denied: denied.status, invalid: invalid.status, sawAuth: JSON.stringify(pet.headers)};
`)
	tracePath, auditPath := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "audit.jsonl")

	code, stdout, stderr := invoke(t, "", map[string]string{"PETS_TOKEN": secret},
		"run", "--profile", "pets", "--profiles", dir, "--input", `{"id":"42"}`,
		"--trace", tracePath, "--audit", auditPath, tool)

	require.Equal(t, 0, code, stderr)
	var out struct {
		Pet     map[string]string `json:"pet"`
		Denied  int               `json:"denied"`
		Invalid int               `json:"invalid"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), "stdout carries only the output: %q", stdout)
	assert.Equal(t, "42", out.Pet["id"])
	assert.Equal(t, 403, out.Denied)
	assert.Equal(t, 400, out.Invalid)
	assert.Contains(t, stderr, "fetched 200", "the run log goes to stderr")

	// Only the granted call reached the upstream, with the credential the guest never saw.
	assert.Equal(t, []string{"GET /v1/pets/42 auth=Bearer " + secret}, up.requests())

	trace := readLines(t, tracePath)
	require.Len(t, trace, 3)
	assert.Equal(t, "forwarded", trace[0]["outcome"])
	assert.Equal(t, "denied", trace[1]["outcome"])
	assert.Equal(t, "invalid", trace[2]["outcome"])

	audits := readLines(t, auditPath)
	require.Len(t, audits, 1, "exactly one audit line")
	a := audits[0]
	assert.Equal(t, "ok", a["status"])
	assert.Equal(t, "pets", a["profile"])
	assert.Equal(t, "fetch.js", a["tool"])
	assert.EqualValues(t, 3, a["host_calls"])
	assert.EqualValues(t, 1, a["host_calls_forwarded"])
	assert.EqualValues(t, 1, a["host_calls_denied"])
	assert.EqualValues(t, 1, a["host_calls_invalid"])
	assert.EqualValues(t, 5, a["budget_calls"])

	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr,
		"trace": readFile(t, tracePath), "audit": readFile(t, auditPath)} {
		assert.NotContains(t, text, secret, "the credential leaked into %s", name)
	}
}

func TestRunFailuresStillWriteOneAuditLine(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	defer srv.Close()
	dir := t.TempDir()
	writeProfile(t, dir, "pets", srv.URL)
	throws := writeFile(t, dir, "throws.js", `throw new Error("no pets today");`)
	ok := writeFile(t, dir, "ok.js", `return 1;`)
	vars := map[string]string{"PETS_TOKEN": secret}

	cases := []struct {
		name     string
		args     []string
		vars     map[string]string
		code     int
		status   string
		inStderr string
	}{
		{"tool throws", []string{"--profile", "pets", throws}, vars, 1, "error", "no pets today"},
		{"unknown profile", []string{"--profile", "nope", ok}, vars, 2, "error", "profile not found"},
		{"missing secret", []string{"--profile", "pets", ok}, nil, 2, "error", "PETS_TOKEN is not set"},
		{"bad input", []string{"--profile", "pets", "--input", "{nope", ok}, vars, 2, "error", "--input is not valid JSON"},
		{"missing tool file", []string{"--profile", "pets", filepath.Join(dir, "gone.js")}, vars, 2, "error", "gone.js"},
		{"wrong tool kind", []string{"--profile", "pets", writeFile(t, dir, "tool.rb", "puts 1")}, vars, 2, "error", "want a .js, .py or .wasm file"},
		{"timeout", []string{"--profile", "pets", "--timeout", "300ms", writeFile(t, dir, "spin.js", "for(;;){}")}, vars, 1, "timeout", "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--profiles", dir}, tc.args...)
			code, _, stderr := invoke(t, "", tc.vars, args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.inStderr)
			lines := auditLines(stderr)
			require.Len(t, lines, 1, "exactly one audit line on stderr: %s", stderr)
			assert.Equal(t, tc.status, lines[0]["status"])
			assert.NotEmpty(t, lines[0]["error"])
		})
	}
}

func TestRunToolFromStdin(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	defer srv.Close()
	dir := t.TempDir()
	writeProfile(t, dir, "pets", srv.URL)
	code, stdout, stderr := invoke(t, "return input.a + input.b;", map[string]string{"PETS_TOKEN": secret, "PLIMSOLL_PROFILES": dir},
		"run", "--profile", "pets", "--input", `{"a":2,"b":3}`, "-")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "5\n", stdout)
}

func TestUsageErrorsAndHelp(t *testing.T) {
	refusals := []struct {
		args []string
		says string
	}{
		{[]string{}, "Usage:"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"run"}, "need --profile NAME and exactly one TOOL"},
		{[]string{"run", "--profile", "x"}, "need --profile NAME and exactly one TOOL"},
		{[]string{"run", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"demo", "--status", "500"}, "--status 500: the demo overloads with 503 or 429"},
		{[]string{"demo", "--retry-after", "soon"}, `--retry-after "soon"`},
		{[]string{"profiles"}, "usage: plimsoll-run profiles check"},
	}
	for _, r := range refusals {
		code, _, stderr := invoke(t, "", nil, r.args...)
		assert.Equal(t, 2, code, "%v: %s", r.args, stderr)
		assert.Contains(t, stderr, r.says, "%v", r.args)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"demo", "--help"}, {"profiles", "check", "--help"}} {
		code, stdout, stderr := invoke(t, "", nil, args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Contains(t, stdout+stderr, "plimsoll-run", "%v", args)
	}
}

func TestProfilesCheck(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "good", "http://127.0.0.1:1")
	writeFile(t, dir, "bad.yaml", "base_url: http://127.0.0.1:1\nroutes: [GET /x]\nhealth_check: POST /status\n")

	code, stdout, _ := invoke(t, "", nil, "profiles", "check", "--profiles", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stdout, "ok    good")
	assert.Contains(t, stdout, "FAIL  profile "+filepath.Join(dir, "bad.yaml")+": health_check:")

	require.NoError(t, os.Remove(filepath.Join(dir, "bad.yaml")))
	code, _, _ = invoke(t, "", nil, "profiles", "check", "--profiles", dir)
	assert.Equal(t, 0, code)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

// auditLines picks the audit lines (JSON objects with a run_id) out of stderr.
func auditLines(stderr string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["run_id"] != nil {
			out = append(out, m)
		}
	}
	return out
}
