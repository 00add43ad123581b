package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// A run request's language is exactly one of host's registered languages; the refusal lists them.
func TestRunRequestLanguagesAreTheRegisteredOnes(t *testing.T) {
	for _, lang := range host.Languages() {
		tool, _, err := codeTool(&lang, digest([]byte("1")), "1")
		require.NoError(t, err, lang)
		k, _ := host.KindForLanguage(lang)
		assert.Equal(t, k.Name(), tool.Kind(), lang)
	}
	tool, _, err := codeTool(nil, digest([]byte("1")), "1")
	require.NoError(t, err)
	assert.Equal(t, host.KindJS, tool.Kind(), "no language is JavaScript")

	for _, unknown := range []string{"", "js", "wasm", "ruby"} {
		_, _, err := codeTool(&unknown, digest([]byte("1")), "1")
		require.Error(t, err, unknown)
		for _, lang := range host.Languages() {
			assert.Contains(t, err.Error(), lang, "the refusal of %q lists every language", unknown)
		}
	}
}
