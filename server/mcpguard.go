package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/plimsoll/plimsoll/profiles"
)

// Bounds on MCP sessions: one client cannot hold the daemon's memory with sessions it never
// uses. An idle session is closed after MCPSessionTimeout, so a client that stops talking gives
// its sessions back within it.
const (
	MCPSessionsPerClient = 16       // a client's open sessions; past it an initialize gets 429
	MCPSessions          = 256      // all clients' open sessions; past it an initialize gets 503
	MCPInitializeBytes   = 64 << 10 // the body of a request that opens a session; past it 413
)

// mcpSessions counts the open MCP sessions by client, to refuse an initialize over a cap.
type mcpSessions struct {
	live    func() map[string]bool // the session ids open now (the SDK's)
	mu      sync.Mutex
	owner   map[string]string // session id → client
	opening map[string]int    // client → initializes being served now
}

func newMCPSessions(live func() map[string]bool) *mcpSessions {
	return &mcpSessions{live: live, owner: map[string]string{}, opening: map[string]int{}}
}

// guard serves next, bounding a request that opens a session (a POST without Mcp-Session-Id):
// its body size, the client's sessions and all sessions.
func (m *mcpSessions) guard(next http.Handler, client func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MCPInitializeBytes+1))
		if err != nil {
			refuse(w, http.StatusBadRequest, "body", "reading the body: "+err.Error())
			return
		}
		if len(body) > MCPInitializeBytes {
			refuse(w, http.StatusRequestEntityTooLarge, "body", "a request that opens an MCP session is over "+profiles.FormatSize(MCPInitializeBytes))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		name := client(r)
		if code, reason := m.reserve(name); code != 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryMCPSession))
			refuse(w, code, "", reason)
			return
		}
		rec := &sessionRecorder{ResponseWriter: w}
		defer func() { m.opened(name, rec.id) }()
		next.ServeHTTP(rec, r)
	})
}

// retryMCPSession is the Retry-After, in seconds, of a refused initialize: an idle session
// closes within MCPSessionTimeout, a closed one at once.
const retryMCPSession = 60

// reserve counts an initialize for client, or says why it is refused.
func (m *mcpSessions) reserve(client string) (int, string) {
	live := m.live()
	m.mu.Lock()
	defer m.mu.Unlock()
	total, mine := 0, m.opening[client]
	for id, c := range m.owner {
		if !live[id] {
			delete(m.owner, id) // closed: idle, deleted by the client, or ended by the daemon
			continue
		}
		total++
		if c == client {
			mine++
		}
	}
	for _, n := range m.opening {
		total += n
	}
	switch {
	case mine >= MCPSessionsPerClient:
		return http.StatusTooManyRequests, fmt.Sprintf("client %s has %d MCP sessions open, the most one client may hold: close one (DELETE /mcp) or let one idle out (%s)", client, mine, MCPSessionTimeout)
	case total >= MCPSessions:
		return http.StatusServiceUnavailable, fmt.Sprintf("the daemon has %d MCP sessions open, the most it holds: retry later", total)
	}
	m.opening[client]++
	return 0, ""
}

// opened ends an initialize's reservation; id is the session it opened, "" for none.
func (m *mcpSessions) opened(client, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opening[client]--; m.opening[client] == 0 {
		delete(m.opening, client)
	}
	if id != "" {
		m.owner[id] = client
	}
}

// sessionRecorder notes the session id the SDK answers with.
type sessionRecorder struct {
	http.ResponseWriter
	id string
}

func (r *sessionRecorder) WriteHeader(code int) {
	if code < 300 {
		r.id = r.Header().Get("Mcp-Session-Id")
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionRecorder) Write(p []byte) (int, error) {
	if r.id == "" {
		r.id = r.Header().Get("Mcp-Session-Id")
	}
	return r.ResponseWriter.Write(p)
}

func (r *sessionRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
