package abi_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

func TestCodesAreDistinctAndNamed(t *testing.T) {
	seen := map[int32]string{}
	for _, c := range abi.Codes {
		assert.Less(t, c.Value, int32(0), "%s: a return code is negative; non-negative returns are lengths", c.Name)
		assert.Empty(t, seen[c.Value], "%s reuses %d", c.Name, c.Value)
		seen[c.Value] = c.Name
		assert.Equal(t, c.Name, abi.CodeName(c.Value))
	}
	assert.Equal(t, map[int32]string{abi.ErrBounds: "ERR_BOUNDS", abi.ErrNoPending: "ERR_NO_PENDING",
		abi.ErrTooSmall: "ERR_TOO_SMALL", abi.ErrNoRun: "ERR_NO_RUN", abi.ErrInflight: "ERR_INFLIGHT",
		abi.ErrUnknown: "ERR_UNKNOWN"}, seen)
	assert.Empty(t, abi.CodeName(0), "a length has no name")
	assert.Empty(t, abi.CodeName(-99))
}

func TestFuncsAreWellFormed(t *testing.T) {
	for _, f := range abi.Funcs {
		assert.Len(t, f.ParamNames, len(f.Params), f.Name)
		assert.Len(t, f.ResultNames, len(f.Results), f.Name)
		got, ok := abi.Lookup(f.Name)
		require.True(t, ok, f.Name)
		assert.Equal(t, f, got)
	}
	_, ok := abi.Lookup("host_exec")
	assert.False(t, ok)
}

// The human contract states the same names and numbers as the code: each return code with its
// value, each function with its signature, each outcome.
func TestABIDocumentAgrees(t *testing.T) {
	doc, err := os.ReadFile("../preamble/ABI.md")
	require.NoError(t, err)
	text := string(doc)
	states := func(want string) {
		t.Helper()
		assert.True(t, strings.Contains(text, want), "preamble/ABI.md does not state %q", want)
	}
	for _, c := range abi.Codes {
		states(fmt.Sprintf("| %d | `%s` |", c.Value, c.Name))
	}
	for _, f := range abi.Funcs {
		params := make([]string, len(f.Params))
		for i, n := range f.ParamNames {
			params[i] = n + ": i32"
		}
		states(fmt.Sprintf("%s(%s) -> i32", f.Name, strings.Join(params, ", ")))
	}
	for _, o := range abi.Outcomes {
		states("| " + o + " |")
	}
	states("`" + abi.OutcomeHeader + "`")
	states(fmt.Sprintf("version %d", abi.Version))
}

func TestCHeaderNamesEverything(t *testing.T) {
	h := string(abi.CHeader())
	assert.Equal(t, h, string(abi.CHeader()), "the header is deterministic")
	for _, c := range abi.Codes {
		assert.Contains(t, h, fmt.Sprintf("#define ABI_%s (%d)", c.Name, c.Value))
	}
	for _, f := range abi.Funcs {
		assert.Contains(t, h, fmt.Sprintf("#define ABI_FN_%s %q", strings.ToUpper(f.Name), f.Name))
	}
	assert.Contains(t, h, `#define ABI_MODULE "plimsoll"`)
	for _, o := range abi.Outcomes {
		assert.Contains(t, h, fmt.Sprintf("#define ABI_OUTCOME_%s %q", strings.ToUpper(o), o))
	}
	assert.Contains(t, h, "#define ABI_RUN_LIMITED 2")
}
