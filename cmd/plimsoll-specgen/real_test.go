package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

// TestRealDocuments: plimsoll-specgen -o DIR on GitHub's and Stripe's published documents (in
// ../shared/realspecs relative to the module root) writes a profile that loads as it is, under the
// API's short name, and says what it kept despite strict OpenAPI rules.
func TestRealDocuments(t *testing.T) {
	for file, name := range map[string]string{"github-api.github.com.json.gz": "github", "stripe-spec3.json.gz": "stripe"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("../../../shared/realspecs", file))
			if err != nil {
				t.Skipf("real OpenAPI documents not available (%v): they live in ../shared/realspecs relative to the module root", err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			require.NoError(t, err)
			data, err := io.ReadAll(zr)
			require.NoError(t, err)
			spec := filepath.Join(t.TempDir(), strings.TrimSuffix(file, ".gz"))
			require.NoError(t, os.WriteFile(spec, data, 0o644))
			dir := t.TempDir()
			code, _, errOut := runCLI("-o", dir, spec)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, errOut, "specgen: wrote 5 files for "+name+" into "+dir)
			if name == "github" {
				require.Contains(t, errOut, `specgen: paths "/orgs/{org}/attestations/{attestation_id}" and "/orgs/{org}/attestations/{subject_digest}" differ only in parameter names`)
				require.Contains(t, errOut, `share the grant line "GET /repos/*/*/compare/*"`)
			}
			p, err := profiles.LoadFile(filepath.Join(dir, name+".yaml"))
			require.NoError(t, err)
			require.Equal(t, strings.ToUpper(name)+"_TOKEN", p.Credential.Env)
			desc, err := os.ReadFile(filepath.Join(dir, name+".description.txt"))
			require.NoError(t, err)
			require.LessOrEqual(t, len(desc)/4, 1500)
		})
	}
}
