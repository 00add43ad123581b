package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/profiles"
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

// BenchmarkPythonClientLoad is what specgen's Python client adds to a run of a one-line Python
// tool, for the store document's client (6 operations) and GitHub's (1,223; skipped when
// ../shared/realspecs is absent). Every iteration runs, in a rotating order: the tool with no
// client (none); with the client run by the run itself, as before preloading (before); with the
// client preloaded (after); and with a client never seen yet, which that run preloads (first).
// It reports each one's median and what before, after and first add over none.
func BenchmarkPythonClientLoad(b *testing.B) {
	docs := [][2]string{{"store", "../preamble/apigen/testdata/store.yaml"}}
	if _, err := os.Stat("../../shared/realspecs/github-api.github.com.json.gz"); err == nil {
		docs = append(docs, [2]string{"github", "../../shared/realspecs/github-api.github.com.json.gz"})
	}
	for _, doc := range docs {
		src := pythonClient(b, doc[1])
		b.Run(doc[0], func(b *testing.B) {
			dir := b.TempDir()
			withClient := func(name, src string) *profiles.Profile {
				path := filepath.Join(dir, name)
				require.NoError(b, os.WriteFile(path, []byte(src), 0o644))
				return profile(b, "http://127.0.0.1:9", "preamble_python: "+path+"\n")
			}
			none, client := profile(b, "http://127.0.0.1:9", ""), withClient("client.py", src)
			tool := PythonTool("tool.py", "return 1")
			defer func() { pythonPreload = true }()
			run := func(p *profiles.Profile, preload bool) time.Duration {
				pythonPreload = preload
				t0 := time.Now()
				res := shared(b).Run(context.Background(), tool, p, nil)
				d := time.Since(t0)
				require.NoError(b, res.Err, "%s", res.Log)
				return d
			}
			run(none, true) // the interpreter started
			run(client, true)
			var times [4][]time.Duration // none, before, after, first
			b.ResetTimer()
			for i := range b.N {
				for j := range 4 {
					switch k := (i + j) % 4; k {
					case 0:
						times[k] = append(times[k], run(none, true))
					case 1:
						times[k] = append(times[k], run(client, false))
					case 2:
						times[k] = append(times[k], run(client, true))
					case 3: // a source no run has had: its sha256 is new
						b.StopTimer()
						fresh := withClient(fmt.Sprintf("client%d.py", i), fmt.Sprintf("%s\n# %d\n", src, i))
						b.StartTimer()
						times[k] = append(times[k], run(fresh, true))
					}
				}
			}
			n := median(times[0])
			b.ReportMetric(n, "none-ms")
			for k, name := range []string{"before", "after", "first"} {
				b.ReportMetric(median(times[k+1])-n, name+"-over-none-ms")
			}
		})
	}
}

// pythonClient is the Python client of an OpenAPI document (gzipped when it ends .gz).
func pythonClient(b *testing.B, doc string) string {
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
	return src
}
