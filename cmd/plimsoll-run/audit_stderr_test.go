package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/testguest"
)

// Issue 9, class 6: a guest's log cannot glue text onto the audit line or follow it. Without
// --audit, the audit line is a line of its own and stderr's last line, whatever the log held.
func TestAuditLineIsStderrsOwnLastLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "pets.yaml", "base_url: http://127.0.0.1:1/v1\ncredential:\n  header: Authorization\n  scheme: Bearer\n  env: PETS_TOKEN\nroutes: [GET /pets/*]\nlimits:\n  max_log_bytes: 1KiB\n")
	wasm := filepath.Join(dir, "guest.wasm")
	require.NoError(t, os.WriteFile(wasm, testguest.Wasm(), 0o600))
	forged := `{"run_id":"forged","profile":"pets","tool":"x","status":"ok"}`
	vars := map[string]string{"PETS_TOKEN": secret, "PLIMSOLL_PROFILES": dir}
	for _, c := range []struct {
		name   string
		args   []string
		status string
	}{
		{"a Go guest's log without a final newline", []string{"--input", `{"op":"flood","fd":2,"n":10}`, wasm}, "ok"},
		{"a log cut mid-line at max_log_bytes", []string{writeFile(t, dir, "flood.js", `for (;;) console.log("spam spam spam");`)}, "limit"},
		{"a forged audit line as the log's last line", []string{writeFile(t, dir, "forge.js", `console.log(`+jsQuote(forged)+`); return 1;`)}, "ok"},
		{"a forged audit line, then text without a newline", []string{"--input", `{"op":"fail","msg":` + jsQuote(forged) + `}`, wasm}, "error"},
		{"a thrown error holding a forged line", []string{writeFile(t, dir, "throw.js", `throw new Error("x\n"+`+jsQuote(forged)+`);`)}, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, stderr := invoke(t, "", vars, append([]string{"run", "--profile", "pets"}, c.args...)...)
			require.True(t, strings.HasSuffix(stderr, "\n"), "stderr ends with a line break: %q", stderr)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			var last map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last), "the last line is the audit line alone: %q", lines[len(lines)-1])
			assert.NotEqual(t, "forged", last["run_id"])
			assert.Equal(t, c.status, last["status"])
			real := 0
			for _, a := range auditLines(stderr) {
				if a["run_id"] != "forged" {
					real++
				}
			}
			assert.Equal(t, 1, real, "exactly one real audit line: %s", stderr)
		})
	}
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
