package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inputs record names every input with its hash, and changes when any input does: that is
// what makes CI rebuild CPython.
func TestPythonInputsRecord(t *testing.T) {
	root := t.TempDir()
	for _, p := range pythonInputs {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := pythonInputsRecord(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pythonInputs {
		if !strings.Contains(string(before), "  "+p+"\n") {
			t.Errorf("the record does not name %s", p)
		}
	}
	if err := os.WriteFile(filepath.Join(root, pythonInputsFile), before, 0o644); err != nil {
		t.Fatal(err)
	}
	if same, err := pythonUnchanged(root); err != nil || !same {
		t.Fatalf("unchanged inputs read as changed (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(root, "guests/python/src/plimsoll.c"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if same, err := pythonUnchanged(root); err != nil || same {
		t.Fatalf("a changed input read as unchanged (%v)", err)
	}
}
