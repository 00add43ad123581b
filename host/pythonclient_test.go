package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/preamble/apigen"
)

// storeClient generates the Python client for apigen's store document and returns the
// profile line that loads it.
func storeClient(t *testing.T) string {
	t.Helper()
	spec, err := apigen.Load(filepath.Join("..", "preamble", "apigen", "testdata", "store.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, apigen.WriteAll(spec, dir, "store"))
	return "preamble_python: " + filepath.Join(dir, apigen.FilesFor("store").Python) + "\n"
}

func TestPythonClientCallsThroughTheBroker(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":7,"name":"Rex"}`))
	}))
	t.Cleanup(up.Close)
	src := `
refused = []
for bad in ("../admin", "a/b", "", "..", "50%"):
    try:
        api.get_pet(petId=bad)
    except ValueError as e:
        refused.append(str(e))
try:
    api.get_pet(fields=["name"])
except ValueError as e:
    refused.append(str(e))
r = await api.get_pet({"petId": "a b"}, fields=["name", "tag"])
return {"refused": refused, "status": r.status, "pet": r.json(),
        "found": [h["fn"] for h in api.search("pet info")][:1], "sig": api.describe("get_pet")["sig"]}
`
	p := profile(t, up.URL, storeClient(t))
	res := shared(t).Run(context.Background(), PythonTool("tool.py", src), p, nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	var out struct {
		Refused []string
		Status  int
		Pet     map[string]any
		Found   []string
		Sig     string
	}
	require.NoError(t, json.Unmarshal(res.Output, &out), "output: %s", res.Output)
	require.Equal(t, []string{
		`api.get_pet: path parameter "petId" must not contain "/", "\" or "%"`,
		`api.get_pet: path parameter "petId" must not contain "/", "\" or "%"`,
		`api.get_pet: path parameter "petId" must not be empty`,
		`api.get_pet: path parameter "petId" must not be "." or ".."`,
		`api.get_pet: path parameter "petId" must not contain "/", "\" or "%"`,
		`api.get_pet: missing required parameter "petId"`,
	}, out.Refused)
	require.Equal(t, 200, out.Status)
	require.Equal(t, map[string]any{"id": 7.0, "name": "Rex"}, out.Pet)
	require.Equal(t, []string{"get_pet"}, out.Found)
	require.Contains(t, out.Sig, "get_pet({petId:int")
	require.Equal(t, []string{"GET /v1/pets/a%20b?fields=name,tag Bearer " + secret}, seen,
		"one request, fields joined with commas (the document says explode: false); the refused values never left the sandbox")
	require.Len(t, res.Trace, 1)
	require.Equal(t, broker.Forwarded, res.Trace[0].Outcome)
}

// The Python client splits search text as search.go does (and so as the JS preamble does).
func TestPythonClientWordsAgreeWithGo(t *testing.T) {
	inputs := []string{"Create an issue", "issuesListForRepo", "List repositories for the authenticated user",
		"GetCustomersCustomerTaxIds", "add-labels_to prs", "HTMLParser v2 über", "Retrieves the details of an account.",
		"", "reposGetContent", "HTTPServerError", "a_b-c d", "ÄÖÜ straße", "\x00\xff", "ies sses xes", "mySQLDatabases",
		"boxes classes status analysis bus", "get_pet by ID", "ABC123def", "x\u2028y\U0001F600z"}
	in, err := json.Marshal(inputs)
	require.NoError(t, err)
	res := shared(t).Run(context.Background(), PythonTool("tool.py", "return [_words(s) for s in input]"),
		profile(t, "http://127.0.0.1:9", storeClient(t)), in)
	require.NoError(t, res.Err, "log: %s", res.Log)
	var got [][]string
	require.NoError(t, json.Unmarshal(res.Output, &got), "output: %s", res.Output)
	require.Len(t, got, len(inputs))
	for i, s := range inputs {
		want := apigen.SearchWords(s)
		if want == nil {
			want = []string{}
		}
		require.Equal(t, want, got[i], "%q", s)
	}
}

// A hostile document's text reaches Python as data: every summary and path round-trips exactly
// through the generated literals, and the module defines nothing but its methods.
func TestPythonClientHostileDocumentIsData(t *testing.T) {
	spec, err := apigen.Load(filepath.Join("..", "preamble", "apigen", "testdata", "hostile.yaml"))
	require.NoError(t, err)
	src, err := spec.PythonClient()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "hostile.preamble.py")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	res := shared(t).Run(context.Background(),
		PythonTool("tool.py", `return sorted([op["summary"], op["route"]] for op in _OPS)`),
		profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\n"), nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	var got [][2]string
	require.NoError(t, json.Unmarshal(res.Output, &got), "output: %s", res.Output)
	var want [][2]string
	for _, op := range spec.Ops {
		want = append(want, [2]string{op.Summary, op.Path})
	}
	require.NotEmpty(t, want)
	require.ElementsMatch(t, want, got)
}

// BenchmarkPythonClientLoad is a run of a one-line Python tool with no client, with the store
// document's client and with GitHub's (1,223 operations; skipped when ../shared/realspecs is
// absent): what loading specgen's client adds to each run.
func BenchmarkPythonClientLoad(b *testing.B) {
	clients := map[string]string{"none": "", "store": "../preamble/apigen/testdata/store.yaml"}
	if _, err := os.Stat("../../shared/realspecs/github-api.github.com.json.gz"); err == nil {
		clients["github"] = "../../shared/realspecs/github-api.github.com.json.gz"
	}
	for _, name := range []string{"none", "store", "github"} {
		doc, ok := clients[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			extra := ""
			if doc != "" {
				extra = "preamble_python: " + pythonClientFile(b, doc) + "\n"
			}
			p := profile(b, "http://127.0.0.1:9", extra)
			tool := PythonTool("tool.py", "return 1")
			for range b.N {
				res := shared(b).Run(context.Background(), tool, p, nil)
				require.NoError(b, res.Err, "%s", res.Log)
			}
		})
	}
}

// pythonClientFile writes the Python client of an OpenAPI document (gzipped when it ends .gz).
func pythonClientFile(b *testing.B, doc string) string {
	data, err := os.ReadFile(doc)
	require.NoError(b, err)
	if strings.HasSuffix(doc, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		require.NoError(b, err)
		data, err = io.ReadAll(zr)
		require.NoError(b, err)
	}
	spec, err := apigen.Parse(data)
	require.NoError(b, err)
	src, err := spec.PythonClient()
	require.NoError(b, err)
	path := filepath.Join(b.TempDir(), "client.py")
	require.NoError(b, os.WriteFile(path, []byte(src), 0o644))
	return path
}
