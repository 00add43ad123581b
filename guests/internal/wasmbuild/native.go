package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// buildNative compiles the engine for the machine running the build, from the same pinned and
// patched sources with the module's optimisation flags, together with a driver that runs and
// times a tool (guests/quickjs/src/native/driver.c), and writes the program to out. It is the
// native baseline of the numeric profile in RATIONALE.md; nothing of it is committed. With m32 it
// targets i386, whose 32-bit pointers give the engine the NaN-boxed values it has in wasm32
// (Debian: libc6-dev-i386 lib32gcc-12-dev).
func buildNative(root, tmp, out string, m32 bool) error {
	if err := checkClang(); err != nil {
		return err
	}
	srcDir := filepath.Join(tmp, "native")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return err
	}
	if _, err := extractQuickJS(quickjsSource(root), srcDir); err != nil {
		return err
	}
	own := filepath.Join(root, "guests", "quickjs", "src")
	if err := applyPatches(filepath.Join(own, "patches"), srcDir); err != nil {
		return fmt.Errorf("patching QuickJS-ng: %w", err)
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	// The module's flags less its target's (wasm32-wasi, bulk memory, the WASI emulations);
	// -g adds symbols for a profiler without changing the code.
	args := []string{"-O2", "-std=gnu11", "-funsigned-char", "-D_GNU_SOURCE", "-g", "-w", "-I", srcDir}
	if m32 {
		args = append(args, "-m32")
	}
	for _, name := range quickjsEngineSources {
		args = append(args, filepath.Join(srcDir, name))
	}
	args = append(args, filepath.Join(own, "native", "driver.c"), "-lm", "-lpthread", "-o", out)
	return runTool(srcDir, clangCommand, args...)
}

// runNative is the -native flag: buildNative in a temporary directory.
func runNative(out string, m32 bool) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "wasmbuild-native-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return buildNative(root, tmp, out, m32)
}
