package server

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/internal/auditlog"
)

func TestEachLineCutsLongLines(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 10) + "\n" + strings.Repeat("y", 11) + "\n\nlast"
	type got struct {
		line  string
		whole bool
	}
	var lines []got
	err := eachLine(strings.NewReader(in), 10, func(l []byte, whole bool) { lines = append(lines, got{string(l), whole}) })
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{"short", true}, {strings.Repeat("x", 10), true}, {strings.Repeat("y", 10), false}, {"", true}, {"last", true}}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", lines, want)
	}
}

// Recovery reads past a 20 MB audit line and a 3 MB journal line, counts them, and still audits
// the interrupted run once; the oversize line's own run is known from its first bytes.
func TestRecoverPastOversizeLines(t *testing.T) {
	dir := t.TempDir()
	audit, jpath := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.jsonl.journal")
	huge := `{"run_id":"done-huge","status":"error","error":"` + strings.Repeat("e", 20<<20) + `"}` + "\n"
	os.WriteFile(audit, []byte(huge+"not json\n"), 0o600)
	os.WriteFile(jpath, []byte(`{"run_id":"done-huge","client":"a","profile":"p"}`+"\n"+
		`{"run_id":"x","client":"`+strings.Repeat("c", 3<<20)+`"}`+"\n"+
		`{"run_id":"lost","client":"a","profile":"p","tool":"t.js"}`+"\n"), 0o600)
	f, err := auditlog.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	n, rep, err := recoverJournal(jpath, audit, f)
	f.Close()
	if err != nil || n != 1 || rep != (lineReport{Oversize: 2, Corrupt: 1}) {
		t.Fatalf("recovered %d, %+v, %v", n, rep, err)
	}
	b, _ := os.ReadFile(audit)
	last := b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1:]
	if !bytes.Contains(last, []byte(`"run_id":"lost"`)) || !bytes.Contains(last, []byte(`"status":"interrupted"`)) {
		t.Fatalf("last line: %s", last)
	}
}

func FuzzRecoverLines(f *testing.F) {
	for _, s := range []string{"", "\n", `{"run_id":"a"}` + "\n", `{"run_id":"a","x":[1,2`, `{"x":{"run_id":"no"},"run_id":"yes"}`, "\xff\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		err := eachLine(bytes.NewReader(b), 16, func(l []byte, whole bool) {
			if len(l) > 16 || bytes.IndexByte(l, '\n') >= 0 {
				t.Fatalf("line %q", l)
			}
			total++
			_ = runIDOf(l)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Count(b, []byte("\n")) + min(1, len(b)-bytes.LastIndexByte(b, '\n')-1); total != want {
			t.Fatalf("%d lines in %q, want %d", total, b, want)
		}
	})
}
