package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The QuickJS-ng engine guest (guests/quickjs) is C: our reactor and shim in guests/quickjs/src,
// compiled with the pinned QuickJS-ng source, which is a dependency read from the shared vendor
// directory and never copied into the repository.
const (
	quickjsTarball = "quickjs-ng-05b2db9.tar.gz"
	quickjsSHA256  = "6e8e9cd59f53d69177d031fd601ce9d160b7fd344f108043e9077437bdde20f5"
	quickjsPrefix  = "quickjs-ng/"

	// Where the tarball comes from: `git archive --format=tar.gz --prefix=quickjs-ng/ COMMIT`
	// in a clone of the upstream repository (v0.16.2 plus two commits).
	quickjsUpstream = "https://github.com/quickjs-ng/quickjs"
	quickjsCommit   = "05b2db95d9b8a088a203950727d1c3459fe0ec47"

	// The C toolchain the committed module is built with (Debian bookworm packages, pinned in
	// .ci/run). Other versions give other bytes, so the build refuses them.
	clangCommand = "clang-19"
	clangVersion = "19.1.7"

	// The engine's shadow stack, in bytes: the linker's -z stack-size and the reactor's limit.
	quickjsStackSize = 1 << 20

	// Every loop of the module calls the engine's deadline check once per this many iterations.
	quickjsLoopTick = 10000

	// The licence notice shipped beside the module.
	quickjsLicenseOut = "guests/quickjs/LICENSE.quickjs-ng"
)

// The pinned Debian packages of the toolchain (dpkg-query -W); .ci/run installs exactly these.
var quickjsToolchainPackages = []string{
	"clang-19=1:19.1.7-3~deb12u1",
	"lld-19=1:19.1.7-3~deb12u1",
	"libclang-rt-19-dev-wasm32=1:19.1.7-3~deb12u1",
	"wasi-libc=0.0~git20220510.9886d3d-2",
}

// quickjsEngineSources are the engine's files we compile, sorted.
var quickjsEngineSources = []string{"dtoa.c", "libregexp.c", "libunicode.c", "quickjs.c"}

// quickjsCompileFlags are shared by every translation unit. No debug information; the build
// directory is mapped to a fixed name so no path of this machine reaches the module.
func quickjsCompileFlags(tmp string) []string {
	return []string{
		"--target=wasm32-wasi", "-O2", "-std=gnu11", "-funsigned-char",
		"-D_GNU_SOURCE", "-D_WASI_EMULATED_PROCESS_CLOCKS", "-D_WASI_EMULATED_SIGNAL",
		"-mbulk-memory", // memcpy and memset become memory.copy and memory.fill, not loops
		"-g0", "-ffile-prefix-map=" + tmp + "=/build", "-fdebug-prefix-map=" + tmp + "=/build",
		"-fno-ident",
	}
}

// quickjsNames is the -quickjs-names flag: keep the function names (a name section) in the
// module, for a profiler; the code is the same bytes. Such a module is not committed.
var quickjsNames bool

// quickjsTarballPath is the -quickjs-tarball flag: the pinned tarball's path, "" for the vendor
// directory's copy.
var quickjsTarballPath string

// quickjsSource is the tarball to build from: -quickjs-tarball, else the vendor directory's.
func quickjsSource(root string) string {
	if quickjsTarballPath != "" {
		return quickjsTarballPath
	}
	return filepath.Join(vendorDir(root), quickjsTarball)
}

// vendorDir is where the pinned sources are: $PLIMSOLL_VENDOR_DIR, else the directory "vendor"
// beside the module root's parent ("shared/vendor" next to the clone).
func vendorDir(root string) string {
	if d := os.Getenv("PLIMSOLL_VENDOR_DIR"); d != "" {
		return d
	}
	return filepath.Join(filepath.Dir(root), "shared", "vendor")
}

// buildQuickJS compiles the engine guest and returns the module. It also returns the extra
// files the build produces beside the module (the licence), by repository path.
func buildQuickJS(root, tmp string) ([]byte, map[string][]byte, error) {
	if err := checkClang(); err != nil {
		return nil, nil, err
	}
	work := filepath.Join(tmp, "quickjs")
	srcDir := filepath.Join(work, "src")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return nil, nil, err
	}
	license, err := extractQuickJS(quickjsSource(root), srcDir)
	if err != nil {
		return nil, nil, err
	}

	own := filepath.Join(root, "guests", "quickjs", "src")
	if err := applyPatches(filepath.Join(own, "patches"), srcDir); err != nil {
		return nil, nil, fmt.Errorf("patching QuickJS-ng: %w", err)
	}
	engineJS, err := os.ReadFile(filepath.Join(own, "engine.js"))
	if err != nil {
		return nil, nil, err
	}
	preambleJS, err := os.ReadFile(filepath.Join(root, "preamble", "js", "preamble.js"))
	if err != nil {
		return nil, nil, err
	}
	genDir := filepath.Join(work, "gen")
	if err := os.MkdirAll(genDir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(genDir, "embedded.h"), embeddedHeader(engineJS, preambleJS), 0o644); err != nil {
		return nil, nil, err
	}
	// Our own sources are copied next to the generated header so every path the compiler sees
	// is under tmp (and mapped to /build).
	ownDir := filepath.Join(work, "own")
	if err := os.MkdirAll(ownDir, 0o755); err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"abi.h", "reactor.c", "stackcheck.h"} {
		b, err := os.ReadFile(filepath.Join(own, name))
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(ownDir, name), b, 0o644); err != nil {
			return nil, nil, err
		}
	}

	flags := quickjsCompileFlags(tmp)
	type unit struct {
		src, obj string
		args     []string
	}
	var units []unit
	for _, name := range quickjsEngineSources {
		obj := filepath.Join(work, strings.TrimSuffix(name, ".c")+".o")
		args := append(append([]string{}, flags...), "-w", "-include", filepath.Join(ownDir, "stackcheck.h"),
			"-c", filepath.Join(srcDir, name), "-o", obj)
		units = append(units, unit{name, obj, args})
	}
	reactorObj := filepath.Join(work, "reactor.o")
	units = append(units, unit{"reactor.c", reactorObj, append(append([]string{}, flags...),
		"-Wall", "-Werror", "-DSTACK_SIZE="+strconv.Itoa(quickjsStackSize), "-I", srcDir, "-I", genDir,
		"-c", filepath.Join(ownDir, "reactor.c"), "-o", reactorObj)})

	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runTool(work, clangCommand, u.args...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}

	out := filepath.Join(work, "engine.wasm")
	link := []string{"--target=wasm32-wasi", "-fuse-ld=lld", "-mexec-model=reactor",
		"-Wl,--stack-first", "-Wl,-z,stack-size=" + strconv.Itoa(quickjsStackSize), "-Wl,--no-entry"}
	if !quickjsNames {
		link = append(link, "-Wl,--strip-all")
	}
	for _, u := range units {
		link = append(link, u.obj)
	}
	link = append(link, "-lwasi-emulated-process-clocks", "-lwasi-emulated-signal", "-o", out)
	if err := runTool(work, clangCommand, link...); err != nil {
		return nil, nil, err
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, nil, err
	}
	if wasm, err = instrumentLoops(wasm, "plimsoll_tick", quickjsLoopTick); err != nil {
		return nil, nil, fmt.Errorf("instrumenting loops: %w", err)
	}
	return wasm, map[string][]byte{quickjsLicenseOut: license}, nil
}

func checkClang() error {
	out, err := exec.Command(clangCommand, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s not found (install %s): %w", clangCommand, strings.Join(quickjsToolchainPackages, " "), err)
	}
	if !strings.Contains(string(out), "version "+clangVersion) {
		first, _, _ := strings.Cut(string(out), "\n")
		return fmt.Errorf("%s is %q, want version %s (install %s)", clangCommand, first, clangVersion,
			strings.Join(quickjsToolchainPackages, " "))
	}
	return nil
}

func runTool(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "SOURCE_DATE_EPOCH=0")
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// extractQuickJS checks the tarball's hash and writes its top-level C sources and headers into
// dir. It returns the licence text.
func extractQuickJS(tarball, dir string) ([]byte, error) {
	data, err := os.ReadFile(tarball)
	if err != nil {
		return nil, fmt.Errorf("the pinned QuickJS-ng source: %w; make it with `git archive --format=tar.gz --prefix=%s %s` in a clone of %s "+
			"(sha256 %s) and pass -quickjs-tarball PATH", err, quickjsPrefix, quickjsCommit, quickjsUpstream, quickjsSHA256)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != quickjsSHA256 {
		return nil, fmt.Errorf("%s: sha256 %s, want %s (QuickJS-ng %s at commit %s)", tarball, got, quickjsSHA256, quickjsUpstream, quickjsCommit)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var license []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutPrefix(h.Name, quickjsPrefix)
		if !ok || h.Typeflag != tar.TypeReg || strings.Contains(name, "/") {
			continue
		}
		if name != "LICENSE" && path.Ext(name) != ".c" && path.Ext(name) != ".h" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if name == "LICENSE" {
			license = b
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	if license == nil {
		return nil, errors.New(tarball + ": no LICENSE")
	}
	for _, name := range quickjsEngineSources {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("%s: %w", tarball, err)
		}
	}
	return license, nil
}

// embeddedHeader renders the JS sources as NUL-terminated C arrays (QuickJS's parser wants the
// NUL), with their lengths.
func embeddedHeader(files ...[]byte) []byte {
	names := []string{"engine_js", "preamble_js"}
	var b bytes.Buffer
	b.WriteString("/* Code generated by guests/internal/wasmbuild. DO NOT EDIT. */\n")
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, c int) bool { return names[idx[a]] < names[idx[c]] })
	for _, i := range idx {
		fmt.Fprintf(&b, "static const unsigned char %s[] = {", names[i])
		for j, c := range append(append([]byte{}, files[i]...), 0) {
			if j%32 == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%d,", c)
		}
		fmt.Fprintf(&b, "\n};\nstatic const size_t %s_len = %d;\n", names[i], len(files[i]))
	}
	return b.Bytes()
}
