package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestGzipIsDeterministic(t *testing.T) {
	data := bytes.Repeat([]byte("plimsoll wasm "), 4096)
	a, err := gzipBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gzipBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two compressions of the same bytes differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("header carries name %q and time %v, want neither", zr.Name, zr.ModTime)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("round trip failed: %v", err)
	}
}

func TestTargetsAreWellFormed(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tg := range targets {
		if seen[tg.name] {
			t.Errorf("target %q listed twice", tg.name)
		}
		seen[tg.name] = true
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(tg.pkg))); err != nil {
			t.Errorf("target %q: package dir: %v", tg.name, err)
		}
		if filepath.Ext(tg.out) != ".gz" {
			t.Errorf("target %q: output %q is not a .gz", tg.name, tg.out)
		}
	}
	if _, err := selectTargets([]string{"no-such-guest"}); err == nil {
		t.Error("an unknown target was accepted")
	}
}
