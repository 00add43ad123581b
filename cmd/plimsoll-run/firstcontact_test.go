package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

func TestMCPContentCarriesTheLogTail(t *testing.T) {
	api := newPetsAPI(t)
	s := startStdio(t, "--profiles", mcpProfiles(t, api.URL), "--profile", "pets")
	defer s.stop(t)

	res, out := s.call(t, "run_pets", `console.log("looked up", input); return 1;`, 7)
	require.False(t, res.IsError, resultText(res))
	require.Len(t, res.Content, 2, "the output, then the log tail")
	assert.Equal(t, "1", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, "log tail:\nlooked up 7\n", res.Content[1].(*mcp.TextContent).Text)
	assert.Equal(t, "looked up 7\n", out.Log)

	res, _ = s.call(t, "run_pets", `console.log("x".repeat(10000)); return 1;`, nil)
	text := res.Content[1].(*mcp.TextContent).Text
	assert.Less(t, len(text), 2100, "bounded: half of MaxLog")
	assert.Contains(t, text, "bytes cut]", "says that it was cut")

	res, _ = s.call(t, "run_pets", `return 1;`, nil)
	assert.Len(t, res.Content, 1, "no log, no log item")
}

func TestMCPTimeout(t *testing.T) {
	api := newPetsAPI(t)
	dir := mcpProfiles(t, api.URL)
	writeFile(t, dir, "quick.yaml", fmt.Sprintf("base_url: %s/v1\ncredential: {scheme: Bearer, env: PETS_TOKEN}\nroutes: [GET /block]\nlimits: {run_timeout: 300ms, call_timeout: 1h}\n", api.URL))
	s := startStdio(t, "--profiles", dir, "--profile", "pets", "--profile", "quick")
	defer s.stop(t)
	call := func(tool, timeout string) *mcp.CallToolResult {
		res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool,
			Arguments: map[string]any{"code": `return (await api.get("/block")).json();`, "timeout": timeout}})
		require.NoError(t, err)
		return res
	}

	// The call's timeout ends a run the profile (30 s) would let wait for the held call.
	res := call("run_pets", "200ms")
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "timeout")

	// The profile's run_timeout (300ms) caps a longer one.
	res = call("run_quick", "1h")
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "limits.run_timeout (300ms)")

	res = call("run_pets", "soon")
	require.True(t, res.IsError)
	assert.Equal(t, `timeout: "soon" is not a positive duration such as 5s or 500ms`, resultText(res))
}

// A client that pipes its requests and closes stdin at once still gets every answer.
func TestMCPPipedRequestsAreAllAnswered(t *testing.T) {
	api := newPetsAPI(t)
	dir := mcpProfiles(t, api.URL)
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_pets","arguments":{"code":"return (await api.get('/pets/5')).json()"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"run_pets","arguments":{"code":"return 3"}}}`,
	}, "\n") // the last line has no newline
	code, stdout, stderr := invoke(t, requests, map[string]string{"PETS_TOKEN": secret}, "mcp", "--profiles", dir, "--profile", "pets")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `"id":1,"result"`)
	assert.Contains(t, stdout, `{\"path\":\"/v1/pets/5\"}`, "id 2's answer")
	assert.Contains(t, stdout, `"id":"three","result":{"content":[{"type":"text","text":"3"}]`)
}

func TestAnswerGateKinds(t *testing.T) {
	for _, c := range []struct {
		line     string
		kind, id string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "request", "1"},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, "response", `"a"`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}`, "response", "1"},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`, "cancel", "7"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", ""},
		{`{"jsonrpc":"2.0","id":null,"error":{}}`, "", ""},
		{`not json`, "", ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "", ""},
	} {
		kind, id := rpcKind([]byte(c.line))
		assert.Equal(t, c.kind, kind, c.line)
		assert.Equal(t, c.id, id, c.line)
	}
}

// The gate lets stdin's EOF through once every request read is answered or cancelled, or
// stdout is gone.
func TestAnswerGateWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newAnswerGate(context.Background())
		g.count([]byte(`{"id":1,"method":"a"}`), true)
		g.count([]byte(`{"id":2,"method":"b"}`), true)
		released := make(chan struct{})
		go func() { g.wait(); close(released) }()
		g.count([]byte(`{"id":1,"result":{}}`), false)
		synctest.Wait() // wait has run as far as it can
		select {
		case <-released:
			t.Fatal("released with request 2 unanswered")
		default:
		}
		g.count([]byte(`{"method":"notifications/cancelled","params":{"requestId":2}}`), true)
		<-released // a hang here fails the test (synctest: deadlock)
	})

	g := newAnswerGate(context.Background())
	g.count([]byte(`{"id":3,"method":"a"}`), true)
	g.abandon()
	g.wait() // stdout is gone: no answer can come
}

// An id the server writes back in another form (1.0 answered as 1, an escaped string unescaped)
// is the same request: the gate does not wait for it for ever.
func TestAnswerGateMatchesIDsAsAnswered(t *testing.T) {
	for _, c := range []struct{ sent, answered string }{{`1.0`, `1`}, {`"\u0041"`, `"A"`}, {` 7 `, `7`}} {
		g := newAnswerGate(context.Background())
		g.count([]byte(`{"jsonrpc":"2.0","id":`+c.sent+`,"method":"ping"}`), true)
		g.count([]byte(`{"jsonrpc":"2.0","id":`+c.answered+`,"result":{}}`), false)
		assert.Empty(t, g.pending, "request id %s answered as %s", c.sent, c.answered)
	}
}

// FuzzLines: whatever the chunks, every complete line comes out once, whole and in order.
func FuzzLines(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\n"), uint8(3))
	f.Add([]byte("no newline"), uint8(1))
	f.Add([]byte("\n\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		var got [][]byte
		l := lines{fn: func(b []byte) { got = append(got, bytes.Clone(b)) }}
		size := int(chunk) + 1
		for i := 0; i < len(data); i += size {
			l.feed(data[i:min(i+size, len(data))])
		}
		want := bytes.SplitAfter(data, []byte("\n"))
		if len(want[len(want)-1]) == 0 || !bytes.HasSuffix(want[len(want)-1], []byte("\n")) {
			want = want[:len(want)-1] // the partial last line stays buffered
		}
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, want[i], got[i])
		}
	})
}

func TestServeWarnsWithoutProfiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "broken.yaml", "base_url: http://127.0.0.1:1\nroutes: [FETCH /x]\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	e := env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--admin", "off", "--profiles", dir}, e)
	}()
	eventuallyTrue(t, func() bool { return strings.Contains(stderr.String(), `"msg":"listening"`) }, "the daemon listening")
	cancel()
	require.Equal(t, exitOK, <-done)
	log := stderr.String()
	abs, _ := filepath.Abs(dir)
	assert.Contains(t, log, `"level":"WARN","msg":"no profile loaded`)
	assert.Contains(t, log, fmt.Sprintf(`"dir":%q`, abs))
	assert.Contains(t, log, `"msg":"profile refused`, "each refusal, with its reason")
	assert.Contains(t, log, "broken.yaml")
}

func TestProfilesCheckNamesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := invoke(t, "", nil, "profiles", "check", "--profiles", dir)
	assert.Equal(t, exitConfig, code)
	assert.Equal(t, "profiles in "+dir+":\n", stdout)
	assert.Contains(t, stderr, "no profiles (.yaml, .yml, .toml, .json) in "+dir)
}

func TestExampleAPIServesLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", ":8080"} {
		code, _, stderr := invoke(t, "", nil, "example-api", "--listen", addr)
		assert.Equal(t, exitConfig, code, addr)
		assert.Contains(t, stderr, "--listen "+addr, addr)
	}
}

// Every command's --help goes to stdout and lists each flag the command takes, and both the
// command's synopsis and the top-level usage name each of them.
func TestHelpListsEveryFlag(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	topLevel := strings.Split(usage, "\n  plimsoll-run ")
	for _, args := range [][]string{
		{"run"}, {"demo"}, {"profiles", "check"}, {"conformance"}, {"serve"}, {"mcp"}, {"example-api"},
		{"admin", "state"}, {"admin", "force-open"}, {"admin", "clear"}, {"admin", "reload"},
		{"admin", "limits"}, {"admin", "retune"},
	} {
		code, stdout, stderr := invoke(t, "", nil, append(args, "--help")...)
		require.Equal(t, exitOK, code, "%v", args)
		require.Empty(t, stderr, "%v: help goes to stdout", args)
		synopsis, _, _ := strings.Cut(stdout, "\n\n")
		var entry string
		for _, e := range topLevel {
			if strings.HasPrefix(e, args[0]+" ") {
				entry += e // a command may have more than one usage line
			}
		}
		require.NotEmpty(t, entry, "%v is in the top-level usage", args)
		flags := flagLine.FindAllStringSubmatch(stdout, -1)
		require.NotEmpty(t, flags, "%v", args)
		for _, f := range flags {
			assert.Contains(t, synopsis, "--"+f[1], "%v: its synopsis names --%s", args, f[1])
			assert.Contains(t, entry, "--"+f[1], "%v: the top-level usage names --%s", args, f[1])
		}
	}
}

// A failed run prints its error once: the log above it without the same text at its end.
func TestRunPrintsItsErrorOnce(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "pets", "http://127.0.0.1:1")
	vars := map[string]string{"PETS_TOKEN": secret}

	code, _, stderr := invoke(t, `console.log("before"); null.x;`, vars, "run", "--profiles", dir, "--profile", "pets", "--audit", filepath.Join(dir, "audit.jsonl"), "-")
	assert.Equal(t, exitTool, code)
	assert.Equal(t, 1, strings.Count(stderr, "TypeError"), stderr)
	assert.True(t, strings.HasPrefix(stderr, "before\nplimsoll-run: tool failed: Uncaught TypeError"), stderr)

	code, _, stderr = invoke(t, `function f() { return f() + 1; } f();`, vars, "run", "--profiles", dir, "--profile", "pets", "--audit", filepath.Join(dir, "audit.jsonl"), "-")
	assert.Equal(t, exitTool, code)
	assert.Equal(t, 1, strings.Count(stderr, "call stack depth exceeded"), stderr)

	code, _, stderr = invoke(t, `for (;;) {}`, vars, "run", "--profiles", dir, "--profile", "pets", "--audit", filepath.Join(dir, "audit.jsonl"), "--timeout", "200ms", "-")
	assert.Equal(t, exitTool, code)
	assert.Equal(t, "plimsoll-run: run timed out: --timeout (200ms) passed\n", stderr, "one phrase, naming the flag")
}

func TestInputErrorNamesThePosition(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "pets", "http://127.0.0.1:1")
	for input, want := range map[string]string{
		`{"id": 4,}`:     "--input is not valid JSON: line 1, column 10: invalid character '}'",
		"{\n  \"id\" 4}": "--input is not valid JSON: line 2, column 8: invalid character '4' after object key",
		`{"id": `:        "--input is not valid JSON: line 1, column 7: unexpected end of JSON input",
	} {
		code, _, stderr := invoke(t, "return 1", nil, "run", "--profiles", dir, "--profile", "pets", "--audit", filepath.Join(dir, "audit.jsonl"), "--input", input, "-")
		assert.Equal(t, exitConfig, code)
		assert.Contains(t, stderr, want, input)
	}
}

func TestStatusLine(t *testing.T) {
	var out strings.Builder
	s := &statusLine{w: &out, after: time.Second}
	st := broker.State{ElapsedMs: 400, Breaker: broker.BreakerClosed}
	s.tick()
	assert.Empty(t, out.String(), "nothing before the broker exists")
	s.started(func() broker.State { return st })
	s.tick()
	assert.Empty(t, out.String(), "nothing in a run's first second")

	st.ElapsedMs, st.Counters = 1250, broker.Counters{Forwarded: 3, Shed: 2, Denied: 1}
	st.Breaker = "open"
	s.tick()
	assert.Equal(t, "\r\x1b[Kplimsoll-run: 1.2s, calls 3 forwarded, 2 shed, 1 denied, breaker open", out.String())
	s.end()
	assert.True(t, strings.HasSuffix(out.String(), "open\r\x1b[K"), "erased at the end")

	out.Reset()
	s.started(func() broker.State { return st })
	s.end()
	assert.Empty(t, out.String(), "a line never drawn is not erased")
}

// Off a terminal, a run's stderr carries no status line.
func TestNoStatusLineOffATerminal(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "pets", "http://127.0.0.1:1")
	code, _, stderr := invoke(t, `await sleep(1200); return 1`, map[string]string{"PETS_TOKEN": secret}, "run", "--profiles", dir, "--profile", "pets", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stderr, "\x1b[K")
}
