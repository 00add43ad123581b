// Command wasmbuild rebuilds the guest modules that plimsoll embeds, reproducibly.
//
//	go run ./guests/internal/wasmbuild [-check [-full]] [target ...]
//
// With no target it handles all of them. Each target's package is built with
//
//	GOOS=wasip1 GOARCH=wasm go build [-buildmode=c-shared] -trimpath -buildvcs=false -ldflags='-s -w'
//
// and gzipped deterministically (best compression, no name, zero modification time). The result
// is written to the target's .wasm.gz, which is committed. With -check, nothing is written: the
// fresh build is compared with the committed file and the command exits 1 when they differ.
// The bytes depend on the Go toolchain and go.sum, so the build pins the toolchain (see toolchain).
//
// The quickjs target is C: it extracts the pinned QuickJS-ng tarball (-quickjs-tarball PATH, else
// $PLIMSOLL_VENDOR_DIR/quickjs-ng-05b2db9.tar.gz; its sha256 is checked; quickjs.go names the
// upstream repository and commit), compiles it with guests/quickjs/src using the
// pinned clang-19 and wasi-libc (see quickjs.go), and also writes guests/quickjs/LICENSE.quickjs-ng
// from the tarball.
//
// With -native PATH it builds no target: it compiles the same QuickJS-ng sources and patches for
// the machine running it (-native-m32: for i386), with a driver that runs and times a tool
// (guests/quickjs/src/native/driver.c), for measuring the engine outside wasm.
//
// The python target is CPython (guests/python/build/build.sh, see python.go): it writes
// guests/python/python.wasm.gz, stdlib.zip.gz, LICENSE.cpython and INPUTS.sha256, the hashes of
// its inputs. Its build is long, so -check skips it while INPUTS.sha256 matches and says so;
// -check -full rebuilds and compares it anyway.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// toolchain is the Go release the committed modules are built with. The bytes differ between
// releases, so the build always uses this one: a machine with another Go fetches it through the
// module proxy, as the go command does for any GOTOOLCHAIN.
const toolchain = "go1.26.8"

// full makes -check rebuild every target, even one whose recorded inputs are unchanged.
var full bool

// target is one embedded guest module. Paths are relative to the module root.
type target struct {
	name    string
	pkg     string // the package to build
	out     string // the committed .wasm.gz
	command bool   // build a command (_start) rather than a reactor (_initialize + run)
	tags    string // -tags, e.g. plimsoll_extism for an Extism plugin on preamble/extism-go

	// cBuild, when set, builds the module itself (a C guest) instead of go build. It also returns
	// files written beside the module (a licence notice), by repository path; -check compares
	// them too.
	cBuild func(root, tmp string) ([]byte, map[string][]byte, error)

	// unchanged, when set, says whether the target's recorded inputs match: -check then skips a
	// build too long for every CI run, and says so (-full builds it anyway).
	unchanged func(root string) (bool, error)
}

// targets lists every guest module. Adding a guest is one line here plus a go:generate line
// next to its embed.
var targets = []target{
	{name: "quickjs", out: "guests/quickjs/engine.wasm.gz", cBuild: buildQuickJS},
	{name: "python", out: "guests/python/python.wasm.gz", cBuild: buildPython, unchanged: pythonUnchanged},
	{name: "testguest", pkg: "./guests/testguest/guest", out: "guests/testguest/testguest.wasm.gz"},
	{name: "conformance-go", pkg: "./conformance/drivers/go", out: "conformance/drivers/go/driver.wasm.gz"},
	{name: "go-inventory", pkg: "./guests/examples/go-inventory", out: "guests/examples/go-inventory.wasm.gz", command: true},
	{name: "testplugin", pkg: "./guests/testplugin/plugin", out: "guests/testplugin/testplugin.wasm.gz"},
	{name: "extism-inventory", pkg: "./guests/examples/extism-inventory", out: "guests/examples/extism-inventory.wasm.gz", tags: "plimsoll_extism"},
	{name: "conformance-extism-go", pkg: "./conformance/drivers/extism-go", out: "conformance/drivers/extism-go/driver.wasm.gz", tags: "plimsoll_extism"},
}

func main() {
	check := flag.Bool("check", false, "compare fresh builds with the committed files instead of writing them")
	flag.StringVar(&quickjsTarballPath, "quickjs-tarball", "", "the pinned QuickJS-ng source tarball `PATH` (default: "+quickjsTarball+" in $PLIMSOLL_VENDOR_DIR)")
	flag.BoolVar(&full, "full", false, "with -check, also rebuild targets whose recorded inputs are unchanged (python)")
	flag.BoolVar(&quickjsNames, "quickjs-names", false, "keep the JS engine's function names, for a profiler (same code; not to be committed)")
	native := flag.String("native", "", "build the JS engine natively with its timing driver into `PATH` (for profiling; no target is built)")
	m32 := flag.Bool("native-m32", false, "with -native, build for i386 (32-bit values, as in wasm32)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: wasmbuild [-check] [-quickjs-tarball PATH] [target ...]\n       wasmbuild -native PATH [-native-m32] [-quickjs-tarball PATH]\ntargets: %s\n", targetNames())
		flag.PrintDefaults()
	}
	flag.Parse()
	if *native != "" {
		if err := runNative(*native, *m32); err != nil {
			fmt.Fprintln(os.Stderr, "wasmbuild:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*check, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "wasmbuild:", err)
		os.Exit(1)
	}
}

func run(check bool, names []string) error {
	selected, err := selectTargets(names)
	if err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "wasmbuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var stale []string
	for _, t := range selected {
		if check && !full && t.unchanged != nil {
			same, err := t.unchanged(root)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if same {
				fmt.Printf("%s: inputs unchanged (their recorded hashes match), rebuild skipped; -full rebuilds it\n", t.name)
				continue
			}
			fmt.Printf("%s: inputs changed since the recorded hashes: rebuilding\n", t.name)
		}
		start := time.Now()
		var wasm []byte
		var extra map[string][]byte
		if t.cBuild != nil {
			wasm, extra, err = t.cBuild(root, tmp)
		} else {
			wasm, err = build(root, tmp, t)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		gz, err := gzipBytes(wasm)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		took := time.Since(start).Round(100 * time.Millisecond)
		outPath := filepath.Join(root, filepath.FromSlash(t.out))
		committed, err := os.ReadFile(outPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		same := err == nil && bytes.Equal(committed, gz)
		summary := fmt.Sprintf("%s: %s: wasm %s, gzip %s, sha256 %x, built in %s",
			t.name, t.out, size(len(wasm)), size(len(gz)), sha256.Sum256(gz), took)

		extraPaths := make([]string, 0, len(extra))
		for p := range extra {
			extraPaths = append(extraPaths, p)
		}
		sort.Strings(extraPaths)
		for _, p := range extraPaths {
			full := filepath.Join(root, filepath.FromSlash(p))
			old, err := os.ReadFile(full)
			switch {
			case err == nil && bytes.Equal(old, extra[p]):
			case check:
				fmt.Fprintf(os.Stderr, "%s: %s is stale\n", t.name, p)
				stale = append(stale, t.name)
			default:
				if err := writeAtomic(full, extra[p]); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				fmt.Printf("%s: %s: written\n", t.name, p)
			}
		}

		switch {
		case check && same:
			fmt.Println(summary + ": up to date")
		case check:
			fmt.Fprintln(os.Stderr, summary)
			fmt.Fprintf(os.Stderr, "%s: %s is stale: %s\n", t.name, t.out, staleReason(committed, err, wasm))
			stale = append(stale, t.name)
		case same:
			fmt.Println(summary + ": unchanged")
		default:
			if err := writeAtomic(outPath, gz); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			fmt.Println(summary + ": written")
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("committed guest modules differ from a fresh build: %s\n"+
			"rebuild with `go run ./guests/internal/wasmbuild %s` using the Go toolchain named in go.mod, and commit the result",
			strings.Join(stale, ", "), strings.Join(stale, " "))
	}
	return nil
}

func selectTargets(names []string) ([]target, error) {
	if len(names) == 0 {
		return targets, nil
	}
	var out []target
	for _, name := range names {
		found := false
		for _, t := range targets {
			if t.name == name {
				out = append(out, t)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown target %q (known: %s)", name, targetNames())
		}
	}
	return out, nil
}

func targetNames() string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	return strings.Join(names, ", ")
}

// moduleRoot is the directory of the main module's go.mod, so the command works from any
// directory inside the module (go generate runs it from the package directory).
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

func build(root, tmp string, t target) ([]byte, error) {
	out := filepath.Join(tmp, t.name+".wasm")
	args := []string{"build"}
	if !t.command {
		args = append(args, "-buildmode=c-shared")
	}
	if t.tags != "" {
		args = append(args, "-tags="+t.tags)
	}
	args = append(args, "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, t.pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("GOOS=wasip1 GOARCH=wasm go %s: %w", strings.Join(args, " "), err)
	}
	return os.ReadFile(out)
}

// gzipBytes compresses deterministically: the header carries no name and no time, and Go's
// writer always records the OS as unknown.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// staleReason says whether the module itself changed or only its compression.
func staleReason(committed []byte, readErr error, fresh []byte) string {
	if readErr != nil {
		return "it does not exist"
	}
	zr, err := gzip.NewReader(bytes.NewReader(committed))
	if err != nil {
		return "it is not valid gzip: " + err.Error()
	}
	old, err := io.ReadAll(zr)
	if err != nil {
		return "it is not valid gzip: " + err.Error()
	}
	if bytes.Equal(old, fresh) {
		return "the module inside is identical, only the compression differs (a different Go version's compress/flate?)"
	}
	return fmt.Sprintf("the module differs (committed wasm %s, sha256 %x; fresh wasm %s, sha256 %x)",
		size(len(old)), sha256.Sum256(old), size(len(fresh)), sha256.Sum256(fresh))
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".wasmbuild-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func size(n int) string {
	return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
}
