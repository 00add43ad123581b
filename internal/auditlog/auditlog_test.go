package auditlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

func TestAppendWritesWholeLinesFromManyWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := f.Append(fmt.Appendf(nil, "{\"n\":%d}\n", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for i := range 50 {
		if !seen[fmt.Sprintf("{\"n\":%d}", i)] {
			t.Errorf("line %d is missing or torn", i)
		}
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

func TestAppendAfterCloseFailsAndOpenAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, []byte("old\n"), 0o600)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := f.Append([]byte("late\n")); err == nil {
		t.Error("an append after Close succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "old\nnew\n" {
		t.Errorf("file %q", b)
	}
}

func TestRewriteReplacesAndKeepsAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	f, _ := Open(path)
	defer f.Close()
	f.Append([]byte("a\nb\n"))
	if err := f.Rewrite([]byte("b\n")); err != nil {
		t.Fatal(err)
	}
	f.Append([]byte("c\n"))
	if b, _ := os.ReadFile(path); string(b) != "b\nc\n" {
		t.Errorf("file %q", b)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Error("the temporary file is left behind")
	}
}

func TestStream(t *testing.T) {
	var buf bytes.Buffer
	s := Stream(&buf)
	if err := s.Append([]byte("x\n")); err != nil || buf.String() != "x\n" {
		t.Errorf("%q, %v", buf.String(), err)
	}
	if s.Rewrite(nil) == nil {
		t.Error("a stream was rewritten")
	}
	if s.Close() != nil || s.Append([]byte("y\n")) != nil {
		t.Error("a stream stays open: its writer is the caller's")
	}
}

// Group commit: the appends that arrive while a sync runs are written and synced together by the
// next one, and none returns before the sync that covers its line.
func TestAppendsDuringASyncShareTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		release := make(chan struct{})
		var synced []int // lines in the file at each sync; only the writing goroutine appends
		f.syncFile = func(file *os.File) error {
			b, _ := os.ReadFile(path)
			synced = append(synced, bytes.Count(b, []byte("\n")))
			if len(synced) == 1 {
				<-release
			}
			return file.Sync()
		}
		var returned atomic.Int32
		var wg sync.WaitGroup
		wg.Go(func() { f.Append([]byte("first\n")); returned.Add(1) })
		synctest.Wait() // the first line's sync runs
		for i := range 10 {
			wg.Go(func() { f.Append(fmt.Appendf(nil, "{\"n\":%d}\n", i)); returned.Add(1) })
		}
		synctest.Wait() // the ten wait for the sync after it
		if n := returned.Load(); n != 0 {
			t.Fatalf("%d appends returned before their sync", n)
		}
		close(release)
		wg.Wait()
		if fmt.Sprint(synced) != "[1 11]" {
			t.Errorf("lines in the file at each sync: %v, want [1 11] (two syncs, the second for all ten)", synced)
		}
	})
}
