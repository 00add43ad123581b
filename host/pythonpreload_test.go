package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
)

// pythonRun runs a one-tool profile and returns the tool's result, failing the test on an error.
func pythonRun(t *testing.T, p *profiles.Profile, src string) (json.RawMessage, string) {
	t.Helper()
	res := shared(t).Run(context.Background(), PythonTool("tool.py", src), p, nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	return res.Output, string(res.Log)
}

// preloadOf says what the shared runtime keeps for the Python preamble src: "none", "unfit" (a
// run runs it itself) or "preloaded".
func preloadOf(t *testing.T, src string) string {
	k := shared(t).kinds[KindPython].(*pythonKind)
	k.preloads.mu.Lock()
	defer k.preloads.mu.Unlock()
	switch e, ok := k.preloads.entries[sha256.Sum256([]byte(src))]; {
	case !ok || e.g == nil:
		return "none"
	case e.g.snap == nil:
		return "unfit"
	}
	return "preloaded"
}

// A profile's client is run once and its runs start from that state, until the file changes:
// then the runs get the new source, never the state of the old one.
func TestPythonPreloadedClientFollowsItsSource(t *testing.T) {
	const tool = "return [VERSION, LOADED_AT, api.version()]"
	client := func(v int) string {
		return "import time\nVERSION = " + string(rune('0'+v)) + "\nLOADED_AT = time.time()\n" +
			"type(api).version = lambda self: VERSION\n"
	}
	path := filepath.Join(t.TempDir(), "client.py")
	require.NoError(t, os.WriteFile(path, []byte(client(1)), 0o644))
	p := profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\n")
	var firstLoad float64
	for v := 1; v <= 2; v++ {
		src := client(v) // the same size as the other version: only the bytes differ
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		var runs [2][3]float64
		for i := range runs {
			out, _ := pythonRun(t, p, tool)
			require.NoError(t, json.Unmarshal(out, &runs[i]), "%s", out)
			require.Equal(t, float64(v), runs[i][0], "the run has version %d of the client", v)
			require.Equal(t, float64(v), runs[i][2], "its methods are version %d's", v)
		}
		require.Equal(t, "preloaded", preloadOf(t, src), "version %d", v)
		require.Equal(t, runs[0][1], runs[1][1], "both runs start from the one preloaded state")
		if v == 1 {
			firstLoad = runs[0][1]
		} else {
			require.Greater(t, runs[0][1], firstLoad, "version 2 was run anew, not served version 1's state")
		}
	}
}

// engineCall runs the interpreter's run export once in a fresh instance of g with stdin.
func engineCall(t *testing.T, g *guest, stdin []byte) (int32, string) {
	t.Helper()
	ctx := context.Background()
	inst, err := instantiate(ctx, g.r, g.mod, profiles.MaxMemory, g.snap, mountLib)
	require.NoError(t, err)
	defer inst.close(ctx)
	require.NoError(t, g.snap.restore(inst))
	var log bytes.Buffer
	inst.port.stdin, inst.port.stderr, inst.port.ctx = bytes.NewReader(stdin), &log, ctx
	res, err := inst.mod.ExportedFunction(abi.ExportRun).Call(ctx)
	require.NoError(t, err)
	return int32(res[0]), log.String()
}

// The engine refuses a run that names a preamble its instance does not hold: a snapshot made
// for one client cannot run a tool of another, nor a plain instance one that expects a client.
func TestPythonPreloadedRunNamesItsPreamble(t *testing.T) {
	k := shared(t).kinds[KindPython].(*pythonKind)
	base, err := k.guest()
	require.NoError(t, err)
	const preamble = "X = 41\n"
	g, key, err := k.withPreamble(context.Background(), base, preamble)
	require.NoError(t, err)
	require.NotNil(t, g)
	defer g.release()
	sum := sha256.Sum256([]byte(preamble))
	require.Equal(t, hex.EncodeToString(sum[:]), key)
	other := sha256.Sum256([]byte("X = 42\n"))

	run := func(g *guest, req string) (int32, string) { return engineCall(t, g, []byte(req)) }
	ret, log := run(g, `{"tool":"return X + 1","preloaded":"`+key+`"}`)
	require.Equal(t, abi.ExitOK, ret, "log: %s", log)
	for _, c := range []struct {
		g         *guest
		req, want string
	}{
		{g, `{"tool":"return X","preloaded":"` + hex.EncodeToString(other[:]) + `"}`, "is not preloaded in this instance"},
		{base, `{"tool":"return X","preloaded":"` + key + `"}`, "is not preloaded in this instance"},
		{g, `{"tool":"return X","preloaded":"` + key + `","preamble":"X = 1"}`, "names a preloaded preamble or brings one, not both"},
		{g, `{"tool":"return X","preloaded":7}`, "field 'preloaded' has the wrong type"},
		{base, `{"preload":"k","preamble":"X = 1","tool":"return X"}`, "a preload request has the fields 'preload' and 'preamble' only"},
		{g, `{"preload":"k","preamble":"X = 1"}`, "a preamble is preloaded already"},
	} {
		ret, log := run(c.g, c.req)
		require.Equal(t, abi.ExitFailed, ret, "%s: log: %s", c.req, log)
		require.Contains(t, log, "plimsoll: bad request from the host: ", c.req)
		require.Contains(t, log, c.want, c.req)
	}
}

// A preamble that never ends is stopped outside any run too, wherever it spins, and nothing is
// kept: its runs then run it themselves, under their own deadline.
func TestPythonPreloadRunawayStops(t *testing.T) {
	k := shared(t).kinds[KindPython].(*pythonKind)
	base, err := k.guest()
	require.NoError(t, err)
	for name, src := range map[string]string{
		"loop":           "while True:\n    pass\n",
		"caught":         "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n",
		"regex in C":     "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n",
		"sleep":          "import time\ntime.sleep(3600)\nX = 1\n",
		"finally loops":  "try:\n    pass\nfinally:\n    while True:\n        pass\n",
		"big arithmetic": "X = 10 ** 10 ** 8\n",
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			g, err := k.preload(ctx, base, src, "k", maxPreloadMemory)
			require.ErrorIs(t, err, errPreloadStopped)
			require.Nil(t, g)
		})
	}
}

// A preamble that needs more memory than a template may have is not kept: the runs run it.
func TestPythonPreloadMemoryIsBounded(t *testing.T) {
	k := shared(t).kinds[KindPython].(*pythonKind)
	base, err := k.guest()
	require.NoError(t, err)
	const limit = 64 << 20
	g, err := k.preload(context.Background(), base, "X = bytearray(4 << 20)\n", "k", limit)
	require.NoError(t, err, "a small preamble fits")
	g.snap.close()
	_, err = k.preload(context.Background(), base, "X = bytearray(96 << 20)\n", "k", limit)
	require.ErrorContains(t, err, "MemoryError")
}

// A preamble that logs or fails when it loads is left to each run, which logs or fails as it did
// before preloading.
func TestPythonPreambleThatLogsOrFailsRunsInEachRun(t *testing.T) {
	dir := t.TempDir()
	withPreamble := func(name, src string, extra string) *profiles.Profile {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		return profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\n"+extra)
	}
	const logging = "print('client loaded')\nX = 1\n"
	logs := withPreamble("logs.py", logging, "")
	for range 2 {
		out, log := pythonRun(t, logs, "return X")
		require.JSONEq(t, "1", string(out))
		require.Contains(t, log, "client loaded\n", "every run logs what the preamble prints")
	}
	require.Equal(t, "unfit", preloadOf(t, logging), "kept as unfit: the second run did not try again")

	const writing = "import os\nos.write(1, b'raw')\nX = 1\n"
	shared(t).Run(context.Background(), PythonTool("tool.py", "return X"), withPreamble("writes.py", writing, ""), nil)
	require.Equal(t, "unfit", preloadOf(t, writing), "a preamble writing on stdout is not preloaded either")

	fails := withPreamble("fails.py", "X = 1\nraise RuntimeError('no table for ' + 'pets')\n", "")
	for range 2 {
		res := shared(t).Run(context.Background(), PythonTool("tool.py", "return X"), fails, nil)
		var te *ToolError
		require.ErrorAs(t, res.Err, &te, "log: %s", res.Log)
		require.Contains(t, te.Message, "RuntimeError: no table for pets")
		require.Contains(t, string(res.Log), `File "preamble.py", line 2`)
	}

	big := withPreamble("big.py", "X = bytearray(96 << 20)\n", "limits:\n  memory: 64MiB\n")
	res := shared(t).Run(context.Background(), PythonTool("tool.py", "return len(X)"), big, nil)
	require.ErrorIs(t, res.Err, ErrLimit, "a preamble larger than the run's memory is the run's limit: %s", res.Log)
}

// What a preamble computes once is every run's (as with the JS engine's preload), but each run
// draws its own randomness: random is seeded afresh when the run starts.
func TestPythonPreloadedRunsDrawTheirOwnRandomness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.py")
	src := "import random\nFIRST = random.random()\n"
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	p := profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\n")
	var runs [2][2]float64
	for i := range runs {
		out, _ := pythonRun(t, p, "import random\nreturn [FIRST, random.random()]")
		require.NoError(t, json.Unmarshal(out, &runs[i]), "%s", out)
	}
	require.Equal(t, "preloaded", preloadOf(t, src))
	require.Equal(t, runs[0][0], runs[1][0], "the preamble ran once")
	require.NotEqual(t, runs[0][1], runs[1][1], "each run drew its own")
}

// A run waits for its client's preload only until its own deadline; Close stops a preload that
// is still running, wherever it loops, and waits for it.
func TestPythonRunStopsWaitingForAPreloadAtItsDeadline(t *testing.T) {
	rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
	require.NoError(t, err)
	require.NoError(t, rt.PreparePython()) // the interpreter's start is not the run's to wait for
	path := filepath.Join(t.TempDir(), "client.py")
	require.NoError(t, os.WriteFile(path, []byte("while True:\n    pass\n"), 0o644))
	p := profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\nlimits:\n  run_timeout: 500ms\n")
	res := rt.Run(context.Background(), PythonTool("tool.py", "return 1"), p, nil)
	require.ErrorIs(t, res.Err, ErrTimeout, "log: %s", res.Log)
	k := rt.kinds[KindPython].(*pythonKind)
	k.preloads.mu.Lock()
	e := k.preloads.entries[sha256.Sum256([]byte("while True:\n    pass\n"))]
	k.preloads.mu.Unlock()
	require.NotNil(t, e)
	select {
	case <-e.ready:
		t.Fatal("the run waited for the preload to end (it runs up to preloadTimeout)")
	default:
	}
	require.NoError(t, rt.Close(context.Background()))
	<-e.ready // Close stopped it
	require.True(t, e.g == nil || e.g.snap == nil, "stopped, so not preloaded")
}

// Runs that start together with a client never seen wait for one preload and all start from it.
func TestPythonConcurrentRunsShareOnePreload(t *testing.T) {
	src := "import time\nLOADED_AT = time.time()\nNAME = 'shared'\n"
	path := filepath.Join(t.TempDir(), "client.py")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	p := profile(t, "http://127.0.0.1:9", "preamble_python: "+path+"\n")
	outs := make([]json.RawMessage, 6)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			res := shared(t).Run(context.Background(), PythonTool("tool.py", "return [NAME, LOADED_AT]"), p, nil)
			assert.NoError(t, res.Err, "log: %s", res.Log)
			outs[i] = res.Output
		})
	}
	wg.Wait()
	for _, out := range outs[1:] {
		require.JSONEq(t, string(outs[0]), string(out), "one preload, one state")
	}
	require.Equal(t, "preloaded", preloadOf(t, src))
}
