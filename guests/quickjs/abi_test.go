package quickjs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

// The reactor's ABI constants are generated from abi/: the committed header must be what the
// generator writes now (go generate ./guests/quickjs rewrites it, then rebuilds the engine).
func TestABIHeaderIsGenerated(t *testing.T) {
	got, err := os.ReadFile("src/abi.h")
	require.NoError(t, err)
	require.Equal(t, string(abi.CHeader()), string(got), "src/abi.h has drifted from abi/: run go generate ./guests/quickjs")
}
