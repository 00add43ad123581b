package mcpserver

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/plimsoll/plimsoll/host"
)

// The tool's language field offers exactly host's registered languages.
func TestInputSchemaOffersTheRegisteredLanguages(t *testing.T) {
	var want []any
	for _, l := range host.Languages() {
		want = append(want, l)
	}
	assert.Equal(t, want, inputSchema.Properties["language"].Enum)
}
