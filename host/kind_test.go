package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The registration table is the one place kinds are named: every name, language and extension
// it lists finds its kind, tools built from it say so, and nothing else is accepted.
func TestKindsAreTheRegistrationTable(t *testing.T) {
	var names, langs []string
	for _, k := range Kinds() {
		require.NotContains(t, names, k.Name(), "kind names are unique")
		names = append(names, k.Name())
		got, ok := KindFor(k.Name())
		require.True(t, ok, k.Name())
		assert.Equal(t, k.Name(), got.Name())
		assert.Equal(t, k.Name(), k.Tool("t", nil).Kind(), "Kind.Tool builds the kind's tool")
		require.NotEmpty(t, k.Extensions(), k.Name())
		for _, ext := range k.Extensions() {
			require.True(t, strings.HasPrefix(ext, "."), "%s: extension %q", k.Name(), ext)
			byExt, ok := KindFor(ext)
			require.True(t, ok, ext)
			assert.Contains(t, byExt.Extensions(), ext)
			tool, err := ToolFromSource("tool"+ext, []byte("1"))
			require.NoError(t, err, ext)
			assert.Equal(t, byExt.Name(), tool.Kind(), "ToolFromSource builds %s as KindFor says", ext)
			assert.Contains(t, ErrToolKind.Error(), ext, "the refusal lists every extension")
		}
		if k.Language() != "" {
			require.NotContains(t, langs, k.Language(), "languages are unique")
			langs = append(langs, k.Language())
			byLang, ok := KindForLanguage(k.Language())
			require.True(t, ok)
			assert.Equal(t, k.Name(), byLang.Name())
		}
	}
	assert.Equal(t, []string{KindJS, KindPython, KindWasm, KindExtism}, names)
	assert.Equal(t, langs, Languages())
	def, ok := KindForLanguage("")
	require.True(t, ok)
	assert.Equal(t, KindJS, def.Name(), "no language is JavaScript")

	for _, unknown := range []string{"", ".rb", "ruby", "javascript", "JS", ".JS", "py"} {
		_, ok := KindFor(unknown)
		assert.False(t, ok, "KindFor(%q)", unknown)
	}
	for _, unknown := range []string{"js", "wasm", "extism", ".py", "Python", "ruby"} {
		_, ok := KindForLanguage(unknown)
		assert.False(t, ok, "KindForLanguage(%q)", unknown)
	}
	_, err := ToolFromSource("tool.rb", []byte("puts 1"))
	assert.EqualError(t, err, "tool tool.rb: want a .js, .py or .wasm file")
	assert.EqualError(t, ErrToolKind, "the tool is neither .js, .py nor .wasm")
}

// Kinds hands out copies: a caller cannot change what the host answers to.
func TestKindExtensionsAreACopy(t *testing.T) {
	k, _ := KindFor(KindJS)
	k.Extensions()[0] = ".rb"
	_, ok := KindFor(".rb")
	assert.False(t, ok)
	assert.True(t, slices.Equal([]string{".js"}, k.Extensions()))
}

// The zero Kind, as KindFor returns with false, is none rather than a panic.
func TestZeroKindIsNone(t *testing.T) {
	k, ok := KindFor(".rb")
	require.False(t, ok)
	assert.Empty(t, k.Name())
	assert.Empty(t, k.Language())
	assert.Empty(t, k.Extensions())
	tool := k.Tool("x.rb", []byte("puts 1"))
	assert.Equal(t, "x.rb", tool.Name)
	assert.Empty(t, tool.Kind())
}

// A Runtime holds one guest of every registered kind and nothing else.
func TestRuntimeHasOneGuestPerKind(t *testing.T) {
	rt := shared(t)
	require.Len(t, rt.kinds, len(Kinds()))
	for _, k := range Kinds() {
		assert.NotNil(t, rt.kinds[k.Name()], k.Name())
	}
	assert.Empty(t, Tool{Name: "nothing"}.Kind(), "a zero Tool has no kind")
}
