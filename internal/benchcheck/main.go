// Command benchcheck catches a performance regression when it lands: it builds one package's
// test binary at a base commit (default HEAD^) and from the working tree, runs the chosen
// benchmarks of both in alternating rounds on the same machine, and fails when the median over
// rounds of head/base (same round) exceeds -max. Alternating rounds and a median ratio cancel
// most of a shared machine's noise; -max is generous (1.5×; the same code measures 0.94–1.10×) so
// that only a real regression trips it.
//
//	go run ./internal/benchcheck -pkg ./host/ -bench 'HostCallJS$|BenchmarkJSRun$'
//
// Each benchmark is compared by the first metric of -units it reports (robust ones: CPU per call,
// a median run), else by ns/op. A base without the package or a benchmark is reported, not judged.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type config struct {
	repo      string // the working tree (head) and the git repository the base is read from
	base      string
	pkg       string
	bench     string
	benchtime string
	units     []string
	rounds    int
	max       float64
}

func main() {
	c := config{}
	flag.StringVar(&c.repo, "repo", ".", "the repository's working tree (the change measured)")
	flag.StringVar(&c.base, "base", "HEAD^", "the commit to compare against")
	flag.StringVar(&c.pkg, "pkg", "./host/", "the package whose benchmarks run")
	flag.StringVar(&c.bench, "bench", "HostCallJS$|BenchmarkJSRun$", "the benchmarks (go test -bench)")
	flag.StringVar(&c.benchtime, "benchtime", "2000x", "per benchmark and round (go test -benchtime)")
	units := flag.String("units", "cpu-ns/call,ms/run-median", "the metrics compared, first reported first; else ns/op")
	flag.IntVar(&c.rounds, "rounds", 5, "alternating rounds")
	flag.Float64Var(&c.max, "max", 1.5, "fail when head/base's median ratio exceeds this")
	flag.Parse()
	c.units = strings.Split(*units, ",")

	text, regressed, err := check(context.Background(), c, os.Stderr)
	fmt.Print(text)
	switch {
	case errors.Is(err, errNoBase), errors.Is(err, errNoCodeChange):
		fmt.Println("benchcheck: skipped:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, "benchcheck:", err)
		os.Exit(2)
	case len(regressed) > 0:
		fmt.Fprintf(os.Stderr, "benchcheck: regressed against %s: %s\n", c.base, strings.Join(regressed, ", "))
		os.Exit(1)
	}
}

var (
	errNoBase       = errors.New("no base commit to compare against")
	errNoCodeChange = errors.New("nothing but Markdown differs from the base")
)

// check builds both binaries, runs the rounds and judges them.
func check(ctx context.Context, c config, progress io.Writer) (string, []string, error) {
	if c.rounds < 1 {
		return "", nil, fmt.Errorf("-rounds %d: at least 1", c.rounds)
	}
	tmp, err := os.MkdirTemp("", "benchcheck-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)

	baseTree := filepath.Join(tmp, "base")
	if err := extract(ctx, c.repo, c.base, baseTree); err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(filepath.Join(baseTree, c.pkg)); err != nil {
		return "", nil, fmt.Errorf("%w: %s has no package %s", errNoBase, c.base, c.pkg)
	}
	if docsOnly(ctx, c.repo, c.base) { // the same code twice: a minute spent measuring noise
		return "", nil, fmt.Errorf("%w %s", errNoCodeChange, c.base)
	}
	bins := map[string]string{"base": filepath.Join(tmp, "base.test"), "head": filepath.Join(tmp, "head.test")}
	trees := map[string]string{"base": baseTree, "head": c.repo}
	for _, side := range []string{"base", "head"} {
		if err := buildTest(ctx, trees[side], c.pkg, bins[side]); err != nil {
			return "", nil, fmt.Errorf("%s: %w", side, err)
		}
	}

	r := rounds{}
	for i := range c.rounds {
		order := []string{"base", "head"}
		if i%2 == 1 { // whichever runs second may find the machine warmer or busier: alternate
			order = []string{"head", "base"}
		}
		for _, side := range order {
			t0 := time.Now()
			ms, err := runBench(ctx, bins[side], filepath.Join(trees[side], c.pkg), c)
			if err != nil {
				return "", nil, fmt.Errorf("%s, round %d: %w", side, i+1, err)
			}
			fmt.Fprintf(progress, "round %d %s: %d benchmarks in %s\n", i+1, side, len(ms), time.Since(t0).Round(time.Millisecond))
			r.add(side, ms)
		}
	}
	text, regressed := report(r.judge(), c.max)
	return text, regressed, nil
}

// extract writes the tree of commit rev into dir (git archive: no checkout, no index change).
func extract(ctx context.Context, repo, rev, dir string) error {
	if err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Run(); err != nil {
		return fmt.Errorf("%w: %s", errNoBase, rev)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", rev)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git archive %s: %w: %s", rev, err, stderr.Bytes())
	}
	return untar(bytes.NewReader(out), dir)
}

// docsOnly says whether the working tree's tracked files differ from rev, in Markdown files only.
// No difference at all is not docs-only: that is the same code measured on purpose (-base HEAD).
func docsOnly(ctx context.Context, repo, rev string) bool {
	same := func(paths ...string) bool {
		args := append([]string{"-C", repo, "diff", "--quiet", rev, "--"}, paths...)
		return exec.CommandContext(ctx, "git", args...).Run() == nil
	}
	return same(".", ":(exclude)*.md") && !same(".")
}

// untar writes a git archive's regular files and directories under dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("archive entry %q leaves the tree", h.Name)
		}
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, h.FileInfo().Mode())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func buildTest(ctx context.Context, tree, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, pkg)
	cmd.Dir = tree
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c %s: %w\n%s", pkg, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("go test -c %s: no test binary (no test files?)", pkg)
	}
	return nil
}

// runBench runs one binary's benchmarks in its package directory (tests read testdata/ there).
func runBench(ctx context.Context, bin, dir string, c config) ([]measurement, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", c.bench, "-test.benchtime", c.benchtime, "-test.count", "1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", bin, err, out)
	}
	return parseOutput(string(out), c.units)
}
