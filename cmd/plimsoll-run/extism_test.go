package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/examples"
	"github.com/plimsoll/plimsoll/guests/testplugin"
)

// demoProfileDir writes a profiles directory whose profile "demo" grants the demo API at base.
func demoProfileDir(t *testing.T, base string) string {
	dir := t.TempDir()
	text := fmt.Sprintf("base_url: %s/v1\ncredential:\n  header: Authorization\n  scheme: Bearer\n  env: %s\n"+
		"routes:\n  - GET /items\n  - GET /items/*\n  - POST /items\nbudget:\n  calls: 200\n", base, demoTokenEnv)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(text), 0o600))
	return dir
}

// `plimsoll-run run --profile demo plugin.wasm` runs the Extism example, recognised by its
// imports, against the demo API: its output, its log line and one audit line.
func TestRunExtismPluginAgainstTheDemoAPI(t *testing.T) {
	api := httptest.NewServer(newDemoAPI(false, 503, "1"))
	defer api.Close()
	dir := demoProfileDir(t, api.URL)
	plugin := filepath.Join(t.TempDir(), "inventory.wasm")
	require.NoError(t, os.WriteFile(plugin, examples.ExtismInventory(), 0o600))
	env := map[string]string{demoTokenEnv: demoToken}

	code, stdout, stderr := invoke(t, "", env, "run", "--profile", "demo", "--profiles", dir, "--input", `{"limit":3}`, plugin)
	require.Equal(t, 0, code, stderr)
	var out map[string]int
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	assert.Equal(t, 3, out["items"])
	assert.Contains(t, stderr, "info: 3 items,")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var audit struct {
		Status    string `json:"status"`
		Tool      string `json:"tool"`
		Forwarded int    `json:"host_calls_forwarded"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &audit), stderr)
	assert.Equal(t, "ok", audit.Status)
	assert.Equal(t, "inventory.wasm", audit.Tool)
	assert.Equal(t, 4, audit.Forwarded)
	assert.NotContains(t, stdout+stderr, demoToken)
}

// --kind extism and --function pick the plugin and its export; --function on a tool that is not
// a plugin, and an unknown --kind, are refused with one audit line.
func TestRunExtismFlags(t *testing.T) {
	api := httptest.NewServer(newDemoAPI(false, 503, "1"))
	defer api.Close()
	dir := demoProfileDir(t, api.URL)
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "testplugin.wasm")
	require.NoError(t, os.WriteFile(plugin, testplugin.Wasm(), 0o600))
	js := filepath.Join(tmp, "hello.js")
	require.NoError(t, os.WriteFile(js, []byte(`return 1;`), 0o600))
	env := map[string]string{demoTokenEnv: demoToken}

	code, stdout, stderr := invoke(t, "", env, "run", "--profile", "demo", "--profiles", dir, "--kind", "extism", "--function", "call",
		"--input", `{"method":"GET","path":"/items/1"}`, plugin)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"status":200`)

	code, _, stderr = invoke(t, "", env, "run", "--profile", "demo", "--profiles", dir, "--function", "nope", plugin)
	assert.Equal(t, exitTool, code)
	assert.Contains(t, stderr, `the plugin exports no function "nope"`)

	code, _, stderr = invoke(t, "", env, "run", "--profile", "demo", "--profiles", dir, "--function", "call", js)
	assert.Equal(t, exitConfig, code)
	assert.Contains(t, stderr, "--function call: tool "+js+" is not an Extism plugin (use --kind extism)")
	assert.Equal(t, 1, strings.Count(stderr, `"status":"error"`), "one audit line: %s", stderr)

	code, _, stderr = invoke(t, "", env, "run", "--profile", "demo", "--profiles", dir, "--kind", "lua", plugin)
	assert.Equal(t, exitConfig, code)
	assert.Contains(t, stderr, `--kind "lua": want js, python, wasm, extism (or leave it out)`)
}
