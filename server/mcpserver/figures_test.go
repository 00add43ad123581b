package mcpserver

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/profiles"
)

// TestDescriptionTokens measures the tool description (bytes/4 as tokens) and the whole
// tools/list entry for profiles made by plimsoll-specgen -emit all from real documents.
// Run: PLIMSOLL_FIGURES=1 go test -run TestDescriptionTokens -v ./server/mcpserver; with
// PLIMSOLL_SPECGEN=/path/to/plimsoll-specgen the descriptions are that build's.
// (the documents are read from ../shared/realspecs, relative to the repository, or
// $PLIMSOLL_REALSPECS).
func TestDescriptionTokens(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	real := os.Getenv("PLIMSOLL_REALSPECS")
	if real == "" {
		real = "../../../shared/realspecs"
	}
	docs := []struct{ name, path string }{
		{"store (small, testdata)", "../../preamble/apigen/testdata/store.yaml"},
		{"github", filepath.Join(real, "github-api.github.com.json.gz")},
		{"stripe", filepath.Join(real, "stripe-spec3.json.gz")},
	}
	for _, d := range docs {
		path := d.path
		if filepath.Ext(path) == ".gz" {
			path = gunzip(t, path)
			if path == "" {
				t.Logf("%s: %s is absent; skipped", d.name, d.path)
				continue
			}
		}
		dir := t.TempDir()
		if bin := os.Getenv("PLIMSOLL_SPECGEN"); bin != "" {
			// Another build of plimsoll-specgen (e.g. the specgen-at-scale branch's): its
			// description file, named by a profile written here.
			out, err := exec.Command(bin, "-emit", "all", "-o", dir, "-name", "api", path).CombinedOutput()
			if err != nil {
				t.Logf("%s: %s: %v: %s", d.name, bin, err, out)
				continue
			}
			prof := "base_url: http://127.0.0.1:9\nroutes:\n"
			for _, r := range readLines(t, filepath.Join(dir, "api.routes")) {
				prof += "  - " + strconv.Quote(r) + "\n"
			}
			if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(prof+"description: api.description.txt\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			spec, err := apigen.Loader{}.Load(path)
			if err != nil {
				t.Logf("%s: %v; skipped", d.name, err)
				continue
			}
			if err := apigen.WriteAll(spec, dir, "api"); err != nil {
				t.Fatal(err)
			}
		}
		p, err := profiles.Load(dir, "api")
		if err != nil {
			t.Fatal(err)
		}
		desc, err := Description(p)
		if err != nil {
			t.Fatal(err)
		}
		entry, _ := json.Marshal(map[string]any{"name": ToolName(p.Name), "description": desc, "inputSchema": inputSchema, "outputSchema": outputSchema})
		routesOnly := Convention + routeText(&profiles.Profile{Routes: p.Routes})
		t.Logf("%s: %d operations; description %d bytes ≈ %d tokens; tools/list entry %d bytes ≈ %d tokens; route-list fallback %d bytes ≈ %d tokens",
			d.name, len(p.Routes), len(desc), len(desc)/4, len(entry), len(entry)/4, len(routesOnly), len(routesOnly)/4)
	}
	schemas, _ := json.Marshal(map[string]any{"inputSchema": inputSchema, "outputSchema": outputSchema})
	t.Logf("fixed part: convention line %d bytes ≈ %d tokens; schemas %d bytes ≈ %d tokens", len(Convention), len(Convention)/4, len(schemas), len(schemas)/4)
}

func gunzip(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path[:len(path)-3]))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, zr); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return out
}

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
