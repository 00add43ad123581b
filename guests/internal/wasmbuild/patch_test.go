package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const patchSample = `a note git may write before the diff
--- a/f.c
+++ b/f.c	2026-12-04 10:00:00
@@ -1,3 +1,4 @@
 one
-two
+TWO
+two and a half
 three
@@ -6 +7,2 @@
 six
+seven
`

func TestApplyPatch(t *testing.T) {
	files, err := parsePatch([]byte(patchSample))
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, "f.c", files[0].path)
	out, err := apply([]byte("one\ntwo\nthree\nfour\nfive\nsix\n"), files[0].hunks)
	require.NoError(t, err)
	assert.Equal(t, "one\nTWO\ntwo and a half\nthree\nfour\nfive\nsix\nseven\n", string(out))
}

func TestApplyPatchRefusesAMismatch(t *testing.T) {
	files, err := parsePatch([]byte(patchSample))
	require.NoError(t, err)
	_, err = apply([]byte("one\n2\nthree\nfour\nfive\nsix\n"), files[0].hunks)
	assert.ErrorContains(t, err, "hunk 1 (line 1): the source differs at line 2")
	_, err = apply([]byte("zero\none\ntwo\nthree\nfour\nfive\nsix\n"), files[0].hunks)
	assert.ErrorContains(t, err, "the source differs at line 1", "a shifted source is not searched for the hunk")
}

func TestParsePatchErrors(t *testing.T) {
	for text, why := range map[string]string{
		"":                                      "no file in the patch",
		"@@ -1 +1 @@\n-a\n+b\n":                 "hunk before any file header",
		"--- a/f\n":                             "--- without +++",
		"--- a/f\n+++ b/../f\n":                 `file "../f" is not a path inside the sources`,
		"--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n": "hunk ends early",
		"--- a/f\n+++ b/f\n@@ -1 +1 @@\n*a\n":   `'*' in a hunk`,
		"--- a/f\n+++ b/f\n@@ x @@\n":           "bad hunk header",
		"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a":     "a file without a final newline is not supported",
	} {
		_, err := parsePatch([]byte(text))
		assert.ErrorContains(t, err, why, "%q", text)
	}
}

// TestQuickJSPatchesParse: every patch the engine build applies parses and names its files.
func TestQuickJSPatchesParse(t *testing.T) {
	names, err := filepath.Glob("../../quickjs/src/patches/*.patch")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		files, err := parsePatch(text)
		require.NoError(t, err, name)
		for _, f := range files {
			assert.NotEmpty(t, f.hunks, name)
			assert.False(t, strings.Contains(f.path, "/"), "%s: the sources are one flat directory", name)
		}
	}
}

// FuzzPatch: parsing never panics, and a parsed patch applies to any source without panicking
// (it succeeds or names what differed).
func FuzzPatch(f *testing.F) {
	f.Add([]byte(patchSample), []byte("one\ntwo\nthree\nfour\nfive\nsix\n"))
	f.Add([]byte("--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"), []byte(""))
	f.Fuzz(func(t *testing.T, patch, src []byte) {
		files, err := parsePatch(patch)
		if err != nil {
			return
		}
		for _, fp := range files {
			out, err := apply(src, fp.hunks)
			if err == nil && len(fp.hunks) == 0 {
				assert.Equal(t, string(src), string(out))
			}
		}
	})
}
