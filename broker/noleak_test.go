package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Guest text and configuration show up in reasons and printed values only in safe forms.

// A long refused path is quoted and truncated without a stray quote before the ellipsis.
func TestLongRefusedPathIsTruncatedCleanly(t *testing.T) {
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes), rtFunc(nil))
	long := "/pets/" + strings.Repeat("a", 200) + "\x1b[31m"

	run.Call(context.Background(), broker.Request{Method: "GET", Path: long})

	path := run.Trace()[0].Path
	assert.True(t, strings.HasSuffix(path, "a…"), path)
	assert.NotContains(t, path, `"`)
}

// Printing a Broker by mistake shows its id and profile, never its credential.
func TestRunPrintsNoSecret(t *testing.T) {
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes), rtFunc(nil))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, run)
		assert.NotContains(t, out, secret, verb)
		assert.Contains(t, out, "run-test", verb)
	}
}

// A base_url that does not parse is refused without repeating it: it may hold a password.
func TestBadBaseURLErrorDoesNotEchoIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(path, []byte("base_url: http://user:hunter2%zz@api.test/v1\nroutes: [GET /x]\n"), 0o600))

	_, err := profiles.LoadFile(path)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "base_url: is not a valid URL")
	assert.NotContains(t, err.Error(), "hunter2")
}
