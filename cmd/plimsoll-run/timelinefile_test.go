package main

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// classesOf returns the class of every call mark in an SVG or HTML chart, in document order.
func classesOf(t *testing.T, doc string, kind string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "use" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && strings.HasPrefix(a.Value, kind+" ") {
					out = append(out, strings.TrimPrefix(a.Value, kind+" "))
				}
			}
		}
	}
	return out
}

// A real run through the CLI: a real JS guest, the real host and broker, an upstream on loopback
// that is overloaded on one route. The chart has a mark per trace entry with its class, the
// breaker's band with its clamped Retry-After, and neither the raw path, the query nor the secret.
func TestRunTimeline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/busy-cat") {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(503)
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeProfile(t, dir, "pets", srv.URL)
	tool := writeFile(t, dir, "chart.js", `
await api.get("/pets/1", {query: "token=q-secret"});
await api.get("/pets/busy-cat");
await api.get("/pets/2");
await api.post("/pets/7", {name: "x"});
return "done";
`)
	for _, ext := range []string{"svg", "html"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(dir, "run."+ext)
			code, _, stderr := invoke(t, "", map[string]string{"PETS_TOKEN": secret},
				"run", "--profile", "pets", "--profiles", dir, "--timeline", path, tool)
			require.Equal(t, 0, code, stderr)
			doc := readFile(t, path)
			assert.Equal(t, []string{"forwarded", "overloaded", "shed", "denied"}, classesOf(t, doc, "call"))
			assert.Contains(t, doc, "503 · Retry-After 120 → 30.0 s (clamped)")
			assert.Contains(t, doc, "GET /pets/*")
			for _, leak := range []string{"busy-cat", "/pets/1", "/pets/7", "q-secret", "token=", secret} {
				assert.NotContains(t, doc, leak)
			}
		})
	}
}

func TestRunTimelineRefusesOtherExtensions(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "pets", "http://127.0.0.1:1")
	tool := writeFile(t, dir, "t.js", `return 1;`)
	code, _, stderr := invoke(t, "", nil, "run", "--profile", "pets", "--profiles", dir, "--timeline", filepath.Join(dir, "run.png"), tool)
	assert.Equal(t, exitConfig, code)
	assert.Contains(t, stderr, "--timeline "+filepath.Join(dir, "run.png")+": want a .svg or .html file")
	assert.Len(t, auditLines(stderr), 1, "a refused run still writes its audit line")
	_, err := os.Stat(filepath.Join(dir, "run.png"))
	assert.True(t, os.IsNotExist(err))

	code, _, stderr = invoke(t, "", nil, "demo", "--timeline", "chart.pdf")
	assert.Equal(t, exitConfig, code)
	assert.Contains(t, stderr, "--timeline chart.pdf: want a .svg or .html file")
}
