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
	"github.com/plimsoll/plimsoll/preamble/specgen"
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

var realSpecCache sync.Map // name → *specgen.Spec, parsed once per test binary

// realGenerated parses a real document with its server replaced by base, writes every output into
// a temporary directory, and returns the directory and the loaded profile.
func realGenerated(tb testing.TB, d realDoc, base string) (string, *profiles.Profile, *specgen.Spec) {
	tb.Helper()
	doc := realSpec(tb, d.file)
	text := string(doc)
	if base != "" {
		require.Contains(tb, text, `"url": "`+d.standIn+`"`)
		text = strings.Replace(text, `"url": "`+d.standIn+`"`, `"url": "`+base+`"`, 1)
	}
	spec, err := specgen.Loader{}.Parse([]byte(text), d.file)
	require.NoError(tb, err)
	dir := filepath.Join(tb.TempDir(), "profiles")
	// With the document's own server the name is d.name (preamble/specgen TestRealDescriptions);
	// with a loopback server it would come from the title, so it is given here.
	require.NoError(tb, specgen.WriteAll(spec, dir, d.name))
	p, err := profiles.LoadFile(filepath.Join(dir, d.name+".yaml"))
	require.NoError(tb, err, "the generated profile loads as it is")
	return dir, p, spec
}

// BenchmarkSpecgenClientLoad is what loading a generated client adds to a warm JS run (fresh
// instance from the snapshot, trivial tool that touches one generated function): the median of
// a run with GitHub's or Stripe's client minus the median of a run without a preamble.
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
			run(b, p, `return api.search("create a customer").length;`)
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

var _ = json.Marshal
var _ = assert.Equal
