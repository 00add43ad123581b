package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/profiles"
)

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"petstore":               "run_petstore",
		"shop.v2":                "run_shop_v2",
		"a b/c":                  "run_a_b_c",
		"Ünï":                    "run__n_", // one '_' per character
		"ok-name_2":              "run_ok-name_2",
		strings.Repeat("x", 200): "run_" + strings.Repeat("x", 124),
	} {
		assert.Equal(t, want, ToolName(in), in)
	}
}

func TestDescriptionFileOrInlineText(t *testing.T) {
	dir := t.TempDir()
	p := func(desc string) *profiles.Profile {
		return &profiles.Profile{Name: "x", File: filepath.Join(dir, "x.yaml"), Description: desc}
	}
	for desc, want := range map[string]string{
		"":                       "",
		"the pet store":          "",
		"notes about x.txt here": "",
		"x.description.txt":      filepath.Join(dir, "x.description.txt"),
		"docs/x.md":              filepath.Join(dir, "docs/x.md"),
	} {
		got, err := DescriptionFile(p(desc))
		require.NoError(t, err, desc)
		assert.Equal(t, want, got, desc)
	}
	for _, desc := range []string{"../secret.txt", "/etc/motd.txt", "a/../../b.md"} {
		_, err := DescriptionFile(p(desc))
		assert.ErrorContains(t, err, "inside the profile's directory", desc)
	}
	// A named file that is missing falls back to the route list, with the reason.
	text, err := APIText(p("gone.txt"))
	assert.ErrorContains(t, err, "gone.txt")
	assert.Contains(t, text, "Granted routes")
}

// plimsoll-specgen -emit all writes the description file and names it in the profile; the tool
// description is then the convention line and that file's text, whole.
func TestSpecgenProfileNamesItsDescription(t *testing.T) {
	spec, err := apigen.Loader{}.Load("../../preamble/apigen/testdata/store.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, apigen.WriteAll(spec, dir, "store"))
	p, err := profiles.Load(dir, "store")
	require.NoError(t, err)
	assert.Equal(t, "store.description.txt", p.Description)
	want, err := os.ReadFile(filepath.Join(dir, "store.description.txt"))
	require.NoError(t, err)
	desc, err := Description(p)
	require.NoError(t, err)
	assert.Equal(t, Convention+strings.TrimRight(string(want), "\n")+"\n", desc)
}

func TestCutAndTail(t *testing.T) {
	assert.Equal(t, "abc", cut("abc", 3))
	assert.Equal(t, "ab\n[truncated: 2 of 4 bytes shown; structuredContent.output has it all]", cut("abcd", 2))
	assert.Equal(t, "\n[truncated: 0 of 2 bytes shown; structuredContent.output has it all]", cut("é", 1), "never half a rune")
	assert.Equal(t, "[2 bytes cut]\ncd", tail("abcd", 2))
	assert.Equal(t, "[2 bytes cut]\n", tail("é", 1))
	assert.Equal(t, `"not json"`, string(OutputJSON([]byte("not json"))))
	assert.Equal(t, `null`, string(OutputJSON(nil)))
	assert.Equal(t, `{"a":1}`, string(OutputJSON([]byte(" {\"a\":1}\n"))))
}

// Output that is not UTF-8 is still a valid JSON string, each bad byte a U+FFFD.
func TestOutputJSONInvalidUTF8(t *testing.T) {
	assert.Equal(t, "\"a\uFFFDb\"", string(OutputJSON([]byte("a\xffb"))))
}
