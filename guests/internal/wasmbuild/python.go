package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The Python guest (guests/python) is CPython 3.13 for wasm32-wasip1, built by
// guests/python/build/build.sh from the vendored CPython and zlib tarballs with the same pinned
// clang-19 and wasi-libc as the JS engine. A build takes 10–30 minutes, so -check skips it when
// the inputs' hashes, recorded in pythonInputsFile, are unchanged; -full rebuilds regardless.
const (
	pythonStdlibOut  = "guests/python/stdlib.zip.gz"
	pythonLicenseOut = "guests/python/LICENSE.cpython"
	pythonInputsFile = "guests/python/INPUTS.sha256"

	// Every loop of the interpreter calls plimsoll_tick once per this many iterations
	// (guests/python.LoopTick).
	pythonLoopTick = 10000

	// EnvPythonWork names a directory where build.sh keeps (and reuses) its build tree.
	envPythonWork = "PLIMSOLL_PYTHON_WORK"
)

// pythonInputs are the files whose bytes make the Python artifacts, by repository path. The
// vendored tarballs' hashes are pinned inside build.sh.
var pythonInputs = []string{
	"guests/python/build/build.sh",
	"guests/python/build/mkzip.py",
	"guests/python/build/Setup.local",
	"guests/python/src/plimsoll.c",
	"guests/python/src/abi.h",
	"guests/internal/wasmbuild/looptick.go",
	"guests/internal/wasmbuild/python.go",
}

// pythonInputsRecord is the text of pythonInputsFile: each input's sha256, the toolchain and the
// loop interval.
func pythonInputsRecord(root string) ([]byte, error) {
	var b strings.Builder
	b.WriteString("# The inputs of guests/python's artifacts (go run ./guests/internal/wasmbuild python).\n")
	b.WriteString("# wasmbuild -check rebuilds CPython only when this record changes.\n")
	for _, p := range pythonInputs {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(data), p)
	}
	fmt.Fprintf(&b, "toolchain %s %s llvm-19 %s\n", strings.Join(quickjsToolchainPackages, " "), clangVersion, toolchain)
	fmt.Fprintf(&b, "loop-tick %d\n", pythonLoopTick)
	return []byte(b.String()), nil
}

// pythonUnchanged says whether the committed record matches the inputs.
func pythonUnchanged(root string) (bool, error) {
	want, err := pythonInputsRecord(root)
	if err != nil {
		return false, err
	}
	got, err := os.ReadFile(filepath.Join(root, pythonInputsFile))
	return err == nil && string(got) == string(want), nil
}

// buildPython runs build.sh and returns the instrumented interpreter, with the compressed
// standard library, the licence and the inputs record beside it.
func buildPython(root, tmp string) ([]byte, map[string][]byte, error) {
	if err := checkClang(); err != nil {
		return nil, nil, err
	}
	work := os.Getenv(envPythonWork)
	if work == "" {
		work = filepath.Join(tmp, "python")
	}
	out := filepath.Join(tmp, "python-out")
	cmd := exec.Command("sh", filepath.Join(root, "guests", "python", "build", "build.sh"), work, out)
	cmd.Env = append(os.Environ(), "PLIMSOLL_VENDOR_DIR="+vendorDir(root))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("guests/python/build/build.sh: %w", err)
	}
	wasm, err := os.ReadFile(filepath.Join(out, "python.wasm"))
	if err != nil {
		return nil, nil, err
	}
	if wasm, err = instrumentLoops(wasm, "plimsoll_tick", pythonLoopTick); err != nil {
		return nil, nil, fmt.Errorf("instrumenting loops: %w", err)
	}
	zip, err := os.ReadFile(filepath.Join(out, "stdlib.zip"))
	if err != nil {
		return nil, nil, err
	}
	zipGz, err := gzipBytes(zip)
	if err != nil {
		return nil, nil, err
	}
	license, err := os.ReadFile(filepath.Join(out, "LICENSE.cpython"))
	if err != nil {
		return nil, nil, err
	}
	record, err := pythonInputsRecord(root)
	if err != nil {
		return nil, nil, err
	}
	return wasm, map[string][]byte{pythonStdlibOut: zipGz, pythonLicenseOut: license, pythonInputsFile: record}, nil
}
