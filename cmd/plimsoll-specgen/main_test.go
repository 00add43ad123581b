package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/preamble/apigen"
)

const store = "../../preamble/apigen/testdata/store.yaml"

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, errOut := runCLI("-h")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "usage: plimsoll-specgen [-emit routes|preamble|python|description|health|profile|all] [-o DIR]")
	require.Contains(t, errOut, "-allow-file-refs")
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{nil, "specgen: no SPEC given"},
		{[]string{"a.yaml", "b.yaml"}, "specgen: one SPEC only, got 2: a.yaml b.yaml"},
		{[]string{"-emit", "everything", store}, `specgen: -emit "everything": want one of routes, preamble, python, description, health, profile, all`},
		{[]string{"-lang", "py", store}, `specgen: -lang "py": only js is supported`},
		{[]string{"-name", "../x", store}, `specgen: -name "../x": use letters, digits, '-' and '_' only`},
	} {
		code, out, errOut := runCLI(tc.args...)
		require.Equal(t, 2, code, tc.args)
		require.Empty(t, out)
		require.Equal(t, tc.msg+"\nrun plimsoll-specgen -h for usage\n", errOut, tc.args)
	}
	code, _, errOut := runCLI("-nope", store)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "flag provided but not defined: -nope")
}

func TestEmitToStdout(t *testing.T) {
	s, err := apigen.Load(store)
	require.NoError(t, err)
	pre, err := s.Preamble()
	require.NoError(t, err)
	prof, err := s.Profile(apigen.ProfileOptions{})
	require.NoError(t, err)
	for kind, want := range map[string]string{
		"routes":      strings.Join(s.Routes(), "\n") + "\n",
		"preamble":    pre,
		"description": s.Description(),
		"health":      "GET /status\n",
		"profile":     string(prof),
	} {
		code, out, errOut := runCLI("-emit", kind, store)
		require.Equal(t, 0, code, kind)
		require.Empty(t, errOut, kind)
		require.Equal(t, want, out, kind)
	}
	// Flags after SPEC work too.
	code, out, _ := runCLI(store, "-emit", "health")
	require.Equal(t, 0, code)
	require.Equal(t, "GET /status\n", out)
}

func TestEmitAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gen")
	code, out, errOut := runCLI("-emit", "all", "-o", dir, "-name", "pets", store)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	require.Equal(t, "specgen: wrote 6 files for pets into "+dir+"\n", errOut)
	for _, f := range []string{"pets.routes", "pets.preamble.js", "pets.description.txt", "pets.health", "pets.yaml"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	prof, err := os.ReadFile(filepath.Join(dir, "pets.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(prof), "\npreamble: pets.preamble.js\n")
	require.Contains(t, string(prof), "\n  env: PETS_TOKEN\n")
	require.Contains(t, string(prof), "\nhealth_check: GET /status\n")
}

func TestEmitOneKindIntoDir(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runCLI("-emit", "preamble", "-o", dir, store)
	require.Equal(t, 0, code)
	require.Empty(t, out)
	_, err := os.Stat(filepath.Join(dir, "sample-store.preamble.js"))
	require.NoError(t, err)
}

func TestHealthTagErrorsExit2(t *testing.T) {
	for file, msg := range map[string]string{
		"testdata/post-health.yaml":  "specgen: x-plimsoll-health-check on POST /status: the health route must be a GET",
		"testdata/param-health.yaml": "specgen: x-plimsoll-health-check on GET /pets/{id}: the health route must have no path parameters",
		"testdata/two-health.yaml":   "specgen: x-plimsoll-health-check on 2 operations (GET /a, GET /b): tag exactly one",
	} {
		for _, kind := range []string{"health", "routes", "profile", "all"} {
			dir := t.TempDir()
			code, out, errOut := runCLI("-emit", kind, "-o", dir, file)
			require.Equal(t, 2, code, file)
			require.Empty(t, out)
			require.Equal(t, msg+"\n", errOut, file)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "%s -emit %s wrote something", file, kind)
		}
	}
}

func TestUntaggedWritesNoHealth(t *testing.T) {
	code, out, errOut := runCLI("-emit", "health", "testdata/untagged.yaml")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	require.Equal(t, "specgen: skipped TRACE /trace: the broker allows only GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS\n"+
		"specgen: no operation is tagged x-plimsoll-health-check: true; no health file written\n", errOut)

	dir := t.TempDir()
	code, _, _ = runCLI("-o", dir, "testdata/untagged.yaml")
	require.Equal(t, 0, code)
	_, err := os.Stat(filepath.Join(dir, "untagged.health"))
	require.ErrorIs(t, err, os.ErrNotExist)
	prof, err := os.ReadFile(filepath.Join(dir, "untagged.yaml"))
	require.NoError(t, err)
	require.NotContains(t, string(prof), "health_check:")
}

func TestIOAndDocumentErrors(t *testing.T) {
	code, _, errOut := runCLI("-emit", "routes", "testdata/does-not-exist.yaml")
	require.Equal(t, 1, code)
	require.Equal(t, "specgen: open testdata/does-not-exist.yaml: no such file or directory\n", errOut)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("swagger: '2.0'\ninfo: {title: T, version: '1'}\npaths: {}\n"), 0o644))
	code, _, errOut = runCLI("-emit", "routes", bad)
	require.Equal(t, 2, code)
	require.Equal(t, "specgen: bad.yaml: openapi version \"\" is not supported; want 3.0 or 3.1\n", errOut)

	// The output directory cannot be created: a file is in the way.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	code, _, errOut = runCLI("-o", filepath.Join(blocker, "sub"), store)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "specgen: mkdir ")
}
