package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchSource is a package whose benchmark reports a fixed metric, so that the verdict of a real
// check (git archive, two builds, alternating runs) is known without timing anything.
func benchSource(value string) string {
	return `package p

import "testing"

func BenchmarkFixed(b *testing.B) {
	for range b.N {
	}
	b.ReportMetric(` + value + `, "cpu-ns/call")
}
`
}

// repoWithBase makes a git repository whose HEAD has the benchmark reporting base, and writes
// head's value into the working tree.
func repoWithBase(t *testing.T, base, head string) string {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-C", dir}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	write("go.mod", "module example.com/p\n\ngo 1.26\n")
	write("p/p_test.go", benchSource(base))
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	write("p/p_test.go", benchSource(head))
	return dir
}

func TestCheckFindsARegressionAgainstTheBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := repoWithBase(t, "100", "250")
	c := config{repo: repo, base: "HEAD", pkg: "./p/", bench: ".", benchtime: "1x", units: prefer, rounds: 3, max: 2}
	text, regressed, err := check(context.Background(), c, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"BenchmarkFixed"}, regressed)
	assert.Contains(t, text, "cpu-ns/call head/base median 2.50× of rounds [2.50 2.50 2.50]")

	c.max = 3
	_, regressed, err = check(context.Background(), c, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, regressed)
}

func TestCheckWithoutABase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := repoWithBase(t, "1", "1")
	_, _, err := check(context.Background(), config{repo: repo, base: "HEAD^", pkg: "./p/", bench: ".", benchtime: "1x", rounds: 1, max: 2}, io.Discard)
	assert.ErrorIs(t, err, errNoBase, "the first commit has no parent")
	_, _, err = check(context.Background(), config{repo: repo, base: "HEAD", pkg: "./q/", bench: ".", benchtime: "1x", rounds: 1, max: 2}, io.Discard)
	assert.ErrorIs(t, err, errNoBase, "the base has no such package")
}

// A change of Markdown alone (a docs-only commit) is not measured: both sides are the same code.
func TestCheckSkipsADocsOnlyChange(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := repoWithBase(t, "1", "1")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# p\n"), 0o644))
	require.NoError(t, exec.Command("git", "-C", repo, "add", "README.md").Run())
	out, err := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", repo, "commit", "-qm", "docs").CombinedOutput()
	require.NoError(t, err, "%s", out)
	c := config{repo: repo, base: "HEAD^", pkg: "./p/", bench: ".", benchtime: "1x", units: prefer, rounds: 1, max: 2}
	_, _, err = check(context.Background(), c, io.Discard)
	assert.ErrorIs(t, err, errNoCodeChange)

	c.base = "HEAD" // no difference at all: the same code, measured on purpose
	_, _, err = check(context.Background(), c, io.Discard)
	require.NoError(t, err)
	c.base = "HEAD^"

	require.NoError(t, os.WriteFile(filepath.Join(repo, "p", "p_test.go"), []byte(benchSource("3")), 0o644))
	_, regressed, err := check(context.Background(), c, io.Discard)
	require.NoError(t, err, "a Go change is measured")
	assert.Equal(t, []string{"BenchmarkFixed"}, regressed)
}
