package host

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/guests/testplugin"
)

func TestReadTool(t *testing.T) {
	for name, tc := range map[string]struct {
		src  []byte
		kind string
	}{
		"tool.js":   {[]byte("return 1"), KindJS},
		"tool.wasm": {testguest.Wasm(), KindWasm},
		"plug.wasm": {testplugin.Wasm(), KindExtism},
	} {
		tool, err := ReadTool(name, bytes.NewReader(tc.src))
		require.NoError(t, err, name)
		require.Equal(t, tc.kind, tool.Kind(), name)
		require.Equal(t, name, tool.Name)
	}
}

func TestReadToolRefusesWhatItCannotRun(t *testing.T) {
	_, err := ReadTool("big.wasm", io.LimitReader(zeros{}, MaxToolBytes+1))
	require.ErrorIs(t, err, ErrToolTooLarge)
	require.EqualError(t, err, "tool big.wasm is over 33554432 bytes")

	_, err = ToolFromSource("tool.rb", []byte("puts 1"))
	require.ErrorIs(t, err, ErrToolKind)
	var re *ReadToolError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "tool.rb", re.Name)

	broken := errors.New("disk gone")
	_, err = ReadTool("tool.js", iotest.ErrReader(broken))
	require.ErrorIs(t, err, broken)

	_, err = ReadTool("exact.js", strings.NewReader(strings.Repeat(" ", MaxToolBytes)))
	require.NoError(t, err, "a tool of exactly MaxToolBytes is read")
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }
