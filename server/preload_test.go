package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/plimsoll/plimsoll/server"
)

// The daemon evaluates every profile's clients in the background after its engines start, so a
// profile's first run starts from their snapshots: what the clients recorded at evaluation is
// older than the moment the test sent the first run.
func TestTheDaemonPreloadsEveryProfilesClients(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) {
		js := filepath.Join(c.ProfilesDir, "clients.preamble.js")
		py := filepath.Join(c.ProfilesDir, "clients.preamble.py")
		if os.WriteFile(js, []byte("globalThis.loadedAt = Date.now();"), 0o644) != nil ||
			os.WriteFile(py, []byte("import time\nLOADED_AT = time.time() * 1000\n"), 0o644) != nil {
			panic("write the clients")
		}
		writeProfile(t, c.ProfilesDir, "clients", up.URL, fmt.Sprintf("preamble: %s\npreamble_python: %s\n", js, py))
	})
	eventually(t, func() bool { return strings.Contains(d.logs.String(), `"msg":"clients preloaded"`) }, "the clients preloaded")
	time.Sleep(2 * time.Millisecond) // the clocks are in ms: a tick apart, so a preload is strictly before
	sent := strconv.FormatInt(time.Now().UnixMilli(), 10)

	_, b := d.do("POST", "/v1/runs", tokenB, run("clients", "return loadedAt < "+sent))
	assert.Equal(t, "true", string(decode[answer](t, b).Output), "the JS client was evaluated before the run: %s", b)
	body := run("clients", "return LOADED_AT < "+sent)
	body["language"] = "python"
	_, b = d.do("POST", "/v1/runs", tokenB, body)
	assert.Equal(t, "true", string(decode[answer](t, b).Output), "the Python client was evaluated before the run: %s", b)
}
