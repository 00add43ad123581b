package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// TOOL and --kind accept exactly what host's kind table registers: every extension, every kind
// name, and the refusals list them all.
func TestRunAcceptsExactlyTheRegisteredKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte("1"), 0o600))
		return path
	}
	for _, k := range host.Kinds() {
		for _, ext := range k.Extensions() {
			tool, err := readTool(write("tool"+ext), nil)
			require.NoError(t, err, ext)
			byExt, _ := host.KindFor(ext)
			assert.Equal(t, byExt.Name(), tool.Kind(), ext)
		}
		tool, err := readToolAs(write("as-"+k.Name()+k.Extensions()[0]), nil, k.Name(), "")
		require.NoError(t, err, k.Name())
		assert.Equal(t, k.Name(), tool.Kind(), "--kind %s", k.Name())
	}

	_, extErr := readTool(write("tool.rb"), nil)
	for _, k := range host.Kinds() {
		for _, ext := range k.Extensions() {
			assert.Contains(t, extErr.Error(), ext, "the refusal of TOOL lists every extension")
		}
	}
	_, err := readToolAs(write("tool.js"), nil, "lua", "")
	require.Error(t, err)
	for _, k := range host.Kinds() {
		assert.Contains(t, err.Error(), k.Name(), "the refusal of a --kind lists every kind")
	}
	_, err = readToolAs(write("tool.js"), nil, ".js", "")
	assert.Error(t, err, "--kind takes a kind's name, not an extension")
}

// The usage text is written by hand: it must still name every kind and extension there is.
func TestUsageNamesEveryKind(t *testing.T) {
	assert.Contains(t, usage, "KIND: "+strings.Join(kindNames(), ", ")+" (")
	_, toolLine, _ := strings.Cut(usage, "TOOL: ")
	toolLine, _, _ = strings.Cut(toolLine, "\n")
	for _, ext := range kindExtensions() {
		assert.Contains(t, toolLine, ext, "TOOL lists %s", ext)
	}
}
