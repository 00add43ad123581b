package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseScenario: the scenario parser never panics, and every refusal is a *ParseError that
// names the file. The v1 suite seeds it, besides the committed corpus.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("v1", "*.yaml"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz.yaml" || pe.Reason == "" {
				t.Fatalf("refusal %v is not a *ParseError naming the file and a reason", err)
			}
			return
		}
		if s.Name != "fuzz" || s.File != "fuzz.yaml" {
			t.Fatalf("parsed scenario is named %q from %q", s.Name, s.File)
		}
	})
}
