package main

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `plimsoll-run run tool.py`: a Python tool through the real host and broker, its output on
// stdout, its print() on stderr, one audit line.
func TestRunPythonTool(t *testing.T) {
	up := &recorder{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	dir := t.TempDir()
	writeProfile(t, dir, "pets", srv.URL)
	tool := writeFile(t, dir, "fetch.py", `
pet = await api.get(f"/pets/{input['id']}")
denied = await api.post("/pets/7", {"name": "x"})
print("fetched", pet.status)
return {"pet": pet.json(), "denied": denied.status}
`)
	auditPath := filepath.Join(dir, "audit.jsonl")
	code, stdout, stderr := invoke(t, "", map[string]string{"PETS_TOKEN": secret},
		"run", "--profile", "pets", "--profiles", dir, "--input", `{"id":"42"}`, "--audit", auditPath, tool)
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, `{"pet": {"id": "42"}, "denied": 403}`, stdout)
	assert.Contains(t, stderr, "fetched 200")
	assert.Equal(t, []string{"GET /v1/pets/42 auth=Bearer " + secret}, up.requests())
	audits := readLines(t, auditPath)
	require.Len(t, audits, 1)
	assert.Equal(t, "ok", audits[0]["status"])
	assert.Equal(t, "fetch.py", audits[0]["tool"])
	assert.NotContains(t, stdout+stderr, secret)

	// --kind python reads any file (or stdin) as Python.
	code, stdout, stderr = invoke(t, "return input['a'] + input['b']", map[string]string{"PETS_TOKEN": secret, "PLIMSOLL_PROFILES": dir},
		"run", "--profile", "pets", "--kind", "python", "--input", `{"a":2,"b":3}`, "-")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "5\n", stdout)

	// A runaway ends at --timeout, exit 1, one audit line saying timeout.
	spin := writeFile(t, dir, "spin.py", "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass\n")
	code, _, stderr = invoke(t, "", map[string]string{"PETS_TOKEN": secret},
		"run", "--profile", "pets", "--profiles", dir, "--timeout", "300ms", "--audit", auditPath, spin)
	assert.Equal(t, 1, code, stderr)
	audits = readLines(t, auditPath)
	require.Len(t, audits, 2)
	assert.Equal(t, "timeout", audits[1]["status"])
}
