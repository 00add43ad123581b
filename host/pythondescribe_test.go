package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/preamble/apigen"
)

// The Python example in specgen's tool description is code a model may copy: it runs as written
// through the generated client, and calls the route the JavaScript example calls.
func TestDescriptionsPythonExampleRuns(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Method+" "+r.RequestURI)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1,"name":"Rex"}`))
	}))
	t.Cleanup(up.Close)
	spec, err := apigen.Load(filepath.Join("..", "preamble", "apigen", "testdata", "store.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, apigen.WriteAll(spec, dir, "store"))
	desc, err := os.ReadFile(filepath.Join(dir, apigen.FilesFor("store").Description))
	require.NoError(t, err)
	_, example, found := strings.Cut(string(desc), "Python (language \"python\")")
	require.True(t, found, "no Python line in:\n%s", desc)
	_, example, found = strings.Cut(example, "e.g. ")
	require.True(t, found)
	example, _, _ = strings.Cut(example, "\n")
	src := strings.ReplaceAll(example, "; ", "\n")

	p := profile(t, up.URL, "preamble_python: "+filepath.Join(dir, apigen.FilesFor("store").Python)+"\n")
	res := shared(t).Run(context.Background(), PythonTool("example.py", src), p, nil)
	require.NoError(t, res.Err, "example %q, log: %s", src, res.Log)
	var out map[string]any
	require.NoError(t, json.Unmarshal(res.Output, &out), "output: %s", res.Output)
	require.Equal(t, map[string]any{"id": 1.0, "name": "Rex"}, out)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"GET /v1/pets/1"}, got)
}
