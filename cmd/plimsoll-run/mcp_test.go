package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server/mcpserver"
)

// petsAPI is a loopback API: /v1/pets/{id} answers, /v1/block holds the call until its client
// goes away or release is closed.
type petsAPI struct {
	*httptest.Server
	held    atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newPetsAPI(t *testing.T) *petsAPI {
	a := &petsAPI{release: make(chan struct{})}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "no credential", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v1/block" {
			a.held.Add(1)
			select {
			case <-a.release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(func() { a.once.Do(func() { close(a.release) }); a.Close() })
	return a
}

// mcpProfiles writes profiles pets (inline description) and shop (a description file) on api.
func mcpProfiles(t *testing.T, api string) string {
	dir := t.TempDir()
	prof := "base_url: %s/v1\ncredential:\n  env: PETS_TOKEN\n  scheme: Bearer\nroutes: [GET /pets/*, GET /block]\ndescription: %s\n"
	writeFile(t, dir, "pets.yaml", fmt.Sprintf(prof, api, "the pet store"))
	writeFile(t, dir, "shop.v2.yaml", fmt.Sprintf(prof, api, "shop.description.txt"))
	writeFile(t, dir, "shop.description.txt", "Shop 1.0: 1 functions on `api`.\napi.getPet({id})\n")
	return dir
}

type stdioServer struct {
	cs       *mcp.ClientSession
	progress *[]*mcp.ProgressNotificationParams
	mu       *sync.Mutex
	stderr   *lockedBuffer
	code     chan int
	stopped  sync.Once
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// startStdio runs plimsoll-run mcp in-process on pipes and connects the SDK's client to it.
func startStdio(t *testing.T, args ...string) *stdioServer {
	t.Helper()
	return startStdioWith(t, nil, args...)
}

// startStdioWith is startStdio with the client's options changed by tweak, if set.
func startStdioWith(t *testing.T, tweak func(*mcp.ClientOptions), args ...string) *stdioServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{stderr: &lockedBuffer{}, code: make(chan int, 1), mu: &sync.Mutex{}, progress: &[]*mcp.ProgressNotificationParams{}}
	e := env{stdin: inR, stdout: outW, stderr: s.stderr, getenv: func(k string) string {
		return map[string]string{"PETS_TOKEN": secret, "PLIMSOLL_CACHE_DIR": os.Getenv("PLIMSOLL_CACHE_DIR")}[k]
	}}
	go func() {
		s.code <- cli(context.Background(), append([]string{"mcp"}, args...), e)
		outW.Close()
	}()
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			defer s.mu.Unlock()
			*s.progress = append(*s.progress, r.Params)
		}}
	if tweak != nil {
		tweak(opts)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err, "stderr: %s", s.stderr.String())
	s.cs = cs
	return s
}

func (s *stdioServer) progressSeen() []*mcp.ProgressNotificationParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(*s.progress)
}

// stop closes the client's end; the command exits 0 once its runs are audited.
func (s *stdioServer) stop(t *testing.T) {
	t.Helper()
	s.stopped.Do(func() {
		s.cs.Close()
		select {
		case code := <-s.code:
			require.Equal(t, exitOK, code, "stderr: %s", s.stderr.String())
		case <-time.After(time.Minute):
			t.Fatal("plimsoll-run mcp did not exit after stdin closed")
		}
	})
}

func (s *stdioServer) call(t *testing.T, tool, code string, input any) (*mcp.CallToolResult, mcpserver.Result) {
	t.Helper()
	args := map[string]any{"code": code}
	if input != nil {
		args["input"] = input
	}
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	b, _ := json.Marshal(res.StructuredContent)
	var out mcpserver.Result
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return res, out
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func auditFileLines(t *testing.T, path string) []map[string]any {
	b, _ := os.ReadFile(path)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

func eventuallyTrue(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("gave up waiting for " + what)
		}
	}
}

func TestMCPStdio(t *testing.T) {
	api := newPetsAPI(t)
	dir := mcpProfiles(t, api.URL)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startStdio(t, "--profiles", dir, "--profile", "pets", "--profile", "shop.v2", "--audit", audit)

	lr, err := s.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, lr.Tools, 2)
	byName := map[string]*mcp.Tool{}
	for _, tl := range lr.Tools {
		byName[tl.Name] = tl
	}
	require.Contains(t, byName, "run_pets")
	require.Contains(t, byName, "run_shop_v2", "'.' is not a tool-name character")
	assert.Equal(t, mcpserver.Convention+"Shop 1.0: 1 functions on `api`.\napi.getPet({id})\n", byName["run_shop_v2"].Description, "the description file")
	assert.Contains(t, byName["run_pets"].Description, "GET /pets/*\nGET /block\n", "the route list")

	// A call against the loopback API.
	res, out := s.call(t, "run_pets", `return (await api.get("/pets/" + input.id)).json();`, map[string]any{"id": 7})
	require.False(t, res.IsError, resultText(res))
	assert.JSONEq(t, `{"path":"/v1/pets/7"}`, string(out.Output))
	assert.Equal(t, mcpserver.Calls{Forwarded: 1}, out.Calls)

	// A denied route and a failing tool.
	res, out = s.call(t, "run_pets", `return (await api.delete("/pets/7")).outcome;`, nil)
	require.False(t, res.IsError)
	assert.Equal(t, `"denied"`, string(out.Output))
	res, out = s.call(t, "run_pets", `null.x`, nil)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "TypeError")
	assert.Equal(t, "error", string(out.Status))

	// Progress, one notification per call at most every 100 ms; the first one at once.
	params := &mcp.CallToolParams{Name: "run_pets", Arguments: map[string]any{"code": `await api.get("/pets/1"); await api.get("/pets/2"); return 2;`}}
	params.SetProgressToken(99)
	res, err = s.cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	eventuallyTrue(t, func() bool { return len(s.progressSeen()) > 0 }, "progress")
	assert.Equal(t, "GET /pets/1 forwarded 200", s.progressSeen()[0].Message)

	// A cancelled call: the run ends and is audited once.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_pets", Arguments: map[string]any{"code": `return (await api.get("/block")).json();`}})
		errc <- err
	}()
	eventuallyTrue(t, func() bool { return api.held.Load() == 1 }, "the call held upstream")
	cancel()
	require.Error(t, <-errc)
	eventuallyTrue(t, func() bool { return len(auditFileLines(t, audit)) == 5 }, "five audit lines")

	// An unknown tool is a protocol error; nothing runs.
	_, err = s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_inventory", Arguments: map[string]any{"code": "1"}})
	require.Error(t, err)

	s.stop(t)
	lines := auditFileLines(t, audit)
	require.Len(t, lines, 5, "one audit line per tool call")
	for _, l := range lines {
		assert.Equal(t, "stdio-agent", l["mcp_client"])
		assert.NotContains(t, l, "client", "no clients file over stdio")
	}
	assert.Contains(t, []any{"error", "timeout"}, lines[4]["status"], "the cancelled run")
	assert.NotContains(t, s.stderr.String(), secret)
}

func TestMCPStdioRefusesBadFlags(t *testing.T) {
	api := newPetsAPI(t)
	dir := mcpProfiles(t, api.URL)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "need at least one --profile"},
		{[]string{"--profile", "nope"}, "nope"},
		{[]string{"--profile", "pets", "--profile", "pets"}, "twice"},
	} {
		code, out, errOut := invoke(t, "", nil, append([]string{"mcp", "--profiles", dir}, c.args...)...)
		assert.Equal(t, exitConfig, code, c.args)
		assert.Empty(t, out, "stdout is the protocol only")
		assert.Contains(t, errOut, c.want)
	}
}

// The real command as a subprocess, through the SDK's CommandTransport: stdout carries the
// protocol and nothing else, and without --audit the audit line is on stderr.
func TestMCPStdioSubprocess(t *testing.T) {
	api := newPetsAPI(t)
	dir := mcpProfiles(t, api.URL)
	cmd := exec.Command(os.Args[0], "mcp", "--profiles", dir, "--profile", "pets")
	cmd.Env = append(os.Environ(), reexecEnv+"=1", "PETS_TOKEN="+secret)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "subprocess-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_pets",
		Arguments: map[string]any{"code": `return (await api.get("/pets/" + input)).json();`, "input": 3}})
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	assert.JSONEq(t, `{"path":"/v1/pets/3"}`, resultText(res))
	require.NoError(t, cs.Close())
	eventuallyTrue(t, func() bool { return strings.Contains(stderr.String(), `"mcp_client":"subprocess-agent"`) }, "the audit line on stderr")
}
