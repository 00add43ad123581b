package main

// Issue 14: specgen on real documents (GitHub's and Stripe's REST descriptions, in
// ../shared/realspecs relative to the module root). Each document goes through specgen as
// plimsoll-specgen -emit all does, the generated profile loads with profiles.LoadFile, and a tool
// that searches the API and calls it through the generated client runs through the real CLI
// against a loopback upstream. Tests skip, saying why, when the folder is absent.

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/profiles"
)

// realSpecsDir is ../shared/realspecs from the module root (two levels up from here).
const realSpecsDir = "../../../shared/realspecs"

type realDoc struct {
	file, name, standIn string
}

var realDocs = []realDoc{
	{"github-api.github.com.json.gz", "github", "https://api.github.com"},
	{"stripe-spec3.json.gz", "stripe", "https://api.stripe.com/"},
}

// realSpec reads one real document (gunzipped), or skips the test.
func realSpec(tb testing.TB, file string) []byte {
	tb.Helper()
	path := filepath.Join(realSpecsDir, file)
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("real OpenAPI documents not available (%v): put them in ../shared/realspecs relative to the module root", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(tb, err)
	data, err := io.ReadAll(zr)
	require.NoError(tb, err)
	return data
}

var realSpecCache sync.Map // name → *apigen.Spec, parsed once per test binary

// realGenerated parses a real document with its server replaced by base, writes every output into
// a temporary directory, and returns the directory and the loaded profile.
func realGenerated(tb testing.TB, d realDoc, base string) (string, *profiles.Profile, *apigen.Spec) {
	tb.Helper()
	doc := realSpec(tb, d.file)
	text := string(doc)
	if base != "" {
		require.Contains(tb, text, `"url": "`+d.standIn+`"`)
		text = strings.Replace(text, `"url": "`+d.standIn+`"`, `"url": "`+base+`"`, 1)
	}
	spec, err := apigen.Loader{}.Parse([]byte(text), d.file)
	require.NoError(tb, err)
	dir := filepath.Join(tb.TempDir(), "profiles")
	// With the document's own server the name is d.name (preamble/apigen TestRealDescriptions);
	// with a loopback server it would come from the title, so it is given here.
	require.NoError(tb, apigen.WriteAll(spec, dir, d.name))
	p, err := profiles.LoadFile(filepath.Join(dir, d.name+".yaml"))
	require.NoError(tb, err, "the generated profile loads as it is")
	return dir, p, spec
}

// BenchmarkSpecgenClientLoad is what loading a generated client adds to a warm JS run (fresh
// instance from the snapshot, trivial tool that touches one generated function): compare the
// median of a run with GitHub's or Stripe's client with the median of a run without a preamble;
// the "search" runs add a first api.search. SPECGEN_BENCH_PROFILE=FILE adds a run with any other
// profile (BENCHMARKS.md compares the client from before issue 14 that way).
func BenchmarkSpecgenClientLoad(b *testing.B) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	rt, err := host.New(context.Background(), host.Options{CacheDir: testcache.Dir(),
		Getenv: func(string) string { return "token" }})
	require.NoError(b, err)
	defer rt.Close(context.Background())

	var bare *profiles.Profile
	{
		dir := b.TempDir()
		path := filepath.Join(dir, "bare.yaml")
		require.NoError(b, os.WriteFile(path, []byte("base_url: "+srv.URL+"\nroutes: [GET /x]\n"), 0o600))
		bare, err = profiles.LoadFile(path)
		require.NoError(b, err)
	}
	run := func(b *testing.B, p *profiles.Profile, src string) {
		tool := host.JSTool("t.js", src)
		res := rt.Run(context.Background(), tool, p, nil)
		require.NoError(b, res.Err, "%s", res.Log)
		b.ResetTimer()
		reportMedian(b, func() {
			if res := rt.Run(context.Background(), tool, p, nil); res.Err != nil {
				b.Fatal(res.Err)
			}
		})
	}
	b.Run("no preamble", func(b *testing.B) { run(b, bare, `return typeof api.get;`) })
	if extra := os.Getenv("SPECGEN_BENCH_PROFILE"); extra != "" {
		b.Run("extra", func(b *testing.B) {
			p, err := profiles.LoadFile(extra)
			require.NoError(b, err)
			run(b, p, `return typeof api.get;`)
		})
	}
	for _, d := range realDocs {
		b.Run(d.name, func(b *testing.B) {
			_, p, spec := realGenerated(b, d, srv.URL)
			run(b, p, `return typeof api.`+spec.Ops[0].Func+`;`)
		})
		b.Run(d.name+" search", func(b *testing.B) {
			_, p, _ := realGenerated(b, d, srv.URL)
			run(b, p, `return api.search("create a customer").results.length;`)
		})
	}
}

// reportMedian is host's: b.N runs of f, the median in ms.
func reportMedian(b *testing.B, f func()) {
	d := make([]time.Duration, 0, b.N)
	for range b.N {
		t0 := time.Now()
		f()
		d = append(d, time.Since(t0))
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms/run-median")
}

// upstream is a loopback stand-in for a real API: it records every request and answers 200 with
// a small JSON echo.
type upstream struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, seenRequest{Method: r.Method, URI: r.RequestURI, Auth: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Body: string(body)})
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"number": 7, "id": "x_1", "method": r.Method, "path": r.URL.Path})
}

func (u *upstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.seen...)
}

// TestSpecgenRealEndToEnd: GitHub's and Stripe's documents go through specgen, the generated
// profile loads, and a tool that finds its operations with api.search and api.describe calls them
// through the generated client, via plimsoll-run run, against a loopback upstream.
func TestSpecgenRealEndToEnd(t *testing.T) {
	const secret = "sk-real-e2e-0d5e"
	// GitHub's document declares no security scheme, so its profile sends the token as it is
	// (Authorization: <token>); Stripe's declares http bearer.
	auth := map[string]string{"github": secret, "stripe": "Bearer " + secret}
	cases := []struct {
		doc    realDoc
		tool   string
		want   string
		sent   []seenRequest
		routes []string
	}{
		{realDocs[0], `
const found = api.search("create an issue");
const fn = found.results[0].fn;
const made = await api[fn]({owner: "octo", repo: "hello world", body: {title: "Found by search", labels: ["bug"]}});
const list = await api.issuesListForRepo({owner: "octo", repo: "hello world", state: "open", labels: "bug,ui", per_page: 2});
const d = api.describe("issuesGet");
let refused = "";
try { await api.reposGet({owner: "octo", repo: "..", body: {}}); } catch (e) { refused = e.message; }
return {fn, made: made.status, number: made.json().number, list: list.status, http: d.http, typed: d.sig.startsWith("issuesGet({owner:string,repo:string,issue_number:int})"), refused};
`, `{"fn":"issuesCreate","made":200,"number":7,"list":200,"http":"GET /repos/{owner}/{repo}/issues/{issue_number}","typed":true,"refused":"reposGet: unknown parameter \"body\" (known: owner, repo)"}`,
			[]seenRequest{
				{Method: "POST", URI: "/repos/octo/hello%20world/issues", Auth: secret, ContentType: "application/json",
					Body: `{"title":"Found by search","labels":["bug"]}`},
				{Method: "GET", URI: "/repos/octo/hello%20world/issues?state=open&labels=bug%2Cui&per_page=2", Auth: secret},
			},
			[]string{"POST /repos/*/*/issues", "GET /repos/*/*/issues"}},
		{realDocs[1], `
const fn = api.search("create a customer").results[0].fn;
const made = await api[fn]({body: {email: "ann@example.com", address: {line1: "1 Main St", city: "Oslo"}, expand: ["tax"]}});
const got = await api.GetCustomersCustomer({customer: "cus_1", expand: ["default_source", "tax"]});
return {fn, made: made.status, got: got.json().path};
`, `{"fn":"PostCustomers","made":200,"got":"/v1/customers/cus_1"}`,
			[]seenRequest{
				{Method: "POST", URI: "/v1/customers", Auth: "Bearer " + secret, ContentType: "application/x-www-form-urlencoded",
					Body: "email=ann%40example.com&address[line1]=1%20Main%20St&address[city]=Oslo&expand[0]=tax"},
				{Method: "GET", URI: "/v1/customers/cus_1?expand[0]=default_source&expand[1]=tax", Auth: "Bearer " + secret},
			},
			[]string{"POST /v1/customers", "GET /v1/customers/*"}},
	}
	for _, c := range cases {
		t.Run(c.doc.name, func(t *testing.T) {
			up := &upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			dir, p, _ := realGenerated(t, c.doc, srv.URL)
			work := t.TempDir()
			tool := writeFile(t, work, "real.js", c.tool)
			trace := filepath.Join(work, "trace.jsonl")
			code, stdout, stderr := invoke(t, "", map[string]string{p.Credential.Env: secret}, "run", "--profile", c.doc.name,
				"--profiles", dir, "--trace", trace, "--audit", filepath.Join(work, "audit.jsonl"), tool)
			require.Equal(t, 0, code, stderr)
			assert.JSONEq(t, c.want, stdout)
			assert.Equal(t, c.sent, up.requests())
			for _, r := range up.requests() {
				assert.Equal(t, auth[c.doc.name], r.Auth)
			}
			var routes []string
			for _, e := range readLines(t, trace) {
				routes = append(routes, e["route"].(string))
			}
			assert.Equal(t, c.routes, routes)
			assert.NotContains(t, stdout+stderr, secret)
		})
	}
}
