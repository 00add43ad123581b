package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Caller is who sent a request: its clients-file name ("" over stdio) and the profiles it may
// use.
type Caller struct {
	Name string
	May  func(profile string) bool // nil: every profile
}

func (c Caller) may(profile string) bool { return c.May == nil || c.May(profile) }

// Call is one tool call for the Backend to run.
type Call struct {
	Caller    Caller
	MCPClient string // the name the MCP client gave in its initialize request
	Profile   *profiles.Profile
	Tool      host.Tool   // JavaScript, named sha256-<first 16 hex digits of Digest>.js
	Digest    string      // "sha256:<hex>" of the code
	Input     []byte      // JSON; "null" when the call has none
	Header    http.Header // the HTTP request's headers; nil over stdio
	// Criticality is the call's _meta "plimsoll/criticality" (MetaCriticality), "" when none:
	// the run's tier at the daemon's queue and at the API's concurrency limit.
	Criticality string
	// OnCall, when set, sees each trace entry as the broker records it (host.RunOptions.OnCall).
	OnCall func(broker.TraceEntry)
	// Elicit, when set, asks the client that started the call about a gated call (approvals);
	// nil when that client cannot be asked.
	Elicit Elicitor
	// TraceParent is the W3C traceparent in the request's _meta, "" when none.
	TraceParent string
}

// Backend runs tool calls. The MCP server is its consumer and owns the interface.
type Backend interface {
	// Profiles returns the profiles served now.
	Profiles() []*profiles.Profile
	// Profile returns the profile called name as served now.
	Profile(name string) (*profiles.Profile, bool)
	// Run runs call to its end and writes its one audit line. A call it refuses before the run
	// (busy, shutting down) is a Result whose Err says why, with no run id; whether a refusal
	// is audited is the Backend's rule.
	Run(ctx context.Context, call Call) host.Result
}

// Options configure a Server.
type Options struct {
	Backend Backend
	// Caller says who sent a request (from its HTTP headers or bearer token info). nil means
	// the process has one caller, who may use every profile the Backend serves (stdio).
	Caller func(*mcp.RequestExtra) (Caller, bool)
	Logger *slog.Logger // default: discard
	// Version is the server's version in the initialize answer.
	Version string
	// MaxText caps the text content (the output as JSON); past it the text is cut and says so.
	// Default 16 KiB. The structured output is not cut.
	MaxText int
	// MaxLog caps the log in the result, keeping its tail. Default 4 KiB.
	MaxLog int
	// ProgressEvery is the least time between two progress notifications; default 100 ms.
	ProgressEvery time.Duration
}

// Defaults of Options.
const (
	DefaultMaxText       = 16 << 10
	DefaultMaxLog        = 4 << 10
	DefaultProgressEvery = 100 * time.Millisecond
)

// Server is plimsoll's MCP server: one SDK server whose tools follow the Backend's profiles.
type Server struct {
	opts Options
	srv  *mcp.Server

	mu     sync.Mutex
	served map[string]*profiles.Profile // tool name → the profile version its tool describes
	trips  *roundTrips                  // runs waiting on a multi-round-trip approval (roundtrip.go)
}

// New builds the server. Its tools are synced with the Backend's profiles before every
// tools/list and tools/call, so a reloaded profile directory shows on the next request.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxText <= 0 {
		opts.MaxText = DefaultMaxText
	}
	if opts.MaxLog <= 0 {
		opts.MaxLog = DefaultMaxLog
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.Version == "" {
		opts.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			opts.Version = bi.Main.Version
		}
	}
	s := &Server{opts: opts, served: map[string]*profiles.Profile{}, trips: newRoundTrips()}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "plimsoll", Version: opts.Version}, &mcp.ServerOptions{
		Logger:       slog.New(atLeast{opts.Logger.Handler(), slog.LevelWarn}), // not a line per session
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.srv.AddReceivingMiddleware(s.gate)
	s.sync()
	return s
}

// MCP is the SDK server, to serve on any transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Serve serves one session on t (stdio) until the client leaves or ctx ends.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// HTTPHandler serves streamable HTTP. Authentication is the caller's: wrap it.
func (s *Server) HTTPHandler(opts *mcp.StreamableHTTPOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, opts)
}

// CloseSessions ends every open session (a draining daemon's last step).
func (s *Server) CloseSessions() {
	for ss := range s.srv.Sessions() {
		ss.Close()
	}
}

// sync adds a tool for each new or changed profile and removes those of profiles gone.
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range s.opts.Backend.Profiles() {
		name := ToolName(p.Name)
		if seen[name] {
			s.opts.Logger.Warn("two profiles share one MCP tool name; the first is served", "tool", name, "profile", p.Name)
			continue
		}
		seen[name] = true
		if s.served[name] == p {
			continue
		}
		desc, err := Description(p)
		if err != nil {
			s.opts.Logger.Warn("profile description not used; the tool lists its routes", "profile", p.Name, "error", err.Error())
		}
		s.served[name] = p
		mcp.AddTool(s.srv, &mcp.Tool{Name: name, Description: desc, InputSchema: inputSchema, OutputSchema: outputSchema},
			s.handler(p.Name))
	}
	var gone []string
	for name := range s.served {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.served, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
}

// profileOf returns the profile name behind a tool, as last synced.
func (s *Server) profileOf(tool string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.served[tool]
	if !ok {
		return "", false
	}
	return p.Name, true
}

func (s *Server) caller(extra *mcp.RequestExtra) (Caller, bool) {
	if s.opts.Caller == nil {
		return Caller{}, true
	}
	return s.opts.Caller(extra)
}

// gate syncs the tools, shows a caller only the tools of its profiles, and answers a call of
// any other tool as the SDK answers an unknown one: its existence is not disclosed.
func (s *Server) gate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			s.sync()
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok {
				return res, err
			}
			c, known := s.caller(req.GetExtra())
			out := *lr
			out.Tools = nil
			for _, t := range lr.Tools {
				if p, ok := s.profileOf(t.Name); ok && known && c.may(p) {
					out.Tools = append(out.Tools, t)
				}
			}
			if out.Tools == nil {
				out.Tools = []*mcp.Tool{}
			}
			return &out, nil
		case "tools/call":
			s.sync()
			params, _ := req.GetParams().(*mcp.CallToolParamsRaw)
			if params == nil {
				break
			}
			c, known := s.caller(req.GetExtra())
			if p, ok := s.profileOf(params.Name); !ok || !known || !c.may(p) {
				return nil, unknownTool(params.Name)
			}
		}
		return next(ctx, method, req)
	}
}

func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// Input is a tool call's arguments.
type Input struct {
	Code     string          `json:"code"`
	Language string          `json:"language,omitempty"` // one of host.Languages(); "" is the first, javascript
	Input    json.RawMessage `json:"input,omitempty"`
	Timeout  string          `json:"timeout,omitempty"` // a Go duration; the profile's run_timeout caps it
}

// Result is a tool call's structured content.
type Result struct {
	Output json.RawMessage `json:"output"`
	Status broker.Status   `json:"status"`
	RunID  string          `json:"run_id"`
	Calls  Calls           `json:"calls"`
	Log    string          `json:"log"`
}

// Calls are the run's host calls by outcome.
type Calls struct {
	Forwarded  int `json:"forwarded"`
	Shed       int `json:"shed"`
	Denied     int `json:"denied"`
	OverBudget int `json:"over_budget"`
	Invalid    int `json:"invalid"`
	Failed     int `json:"failed"`
}

// handler runs one call of the tool of profile name.
func (s *Server) handler(name string) mcp.ToolHandlerFor[Input, *Result] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, *Result, error) {
		c, ok := s.caller(req.Extra)
		if !ok || !c.may(name) {
			return nil, nil, unknownTool(req.Params.Name)
		}
		p, ok := s.opts.Backend.Profile(name)
		if !ok {
			return nil, nil, unknownTool(req.Params.Name) // removed since the last sync
		}
		ctx, cancel, err := withDeadline(ctx, in.Timeout, p)
		if err != nil {
			return refusal(err.Error()), nil, nil
		}
		defer cancel()
		sum := sha256.Sum256([]byte(in.Code))
		digest := hex.EncodeToString(sum[:])
		kind, ok := host.KindForLanguage(in.Language)
		if !ok {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("language %q: want %s", in.Language, strings.Join(host.Languages(), " or "))}}}, nil, nil
		}
		tool, err := host.ToolFromSource("sha256-"+digest[:16]+kind.Extensions()[0], []byte(in.Code))
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("code is %d bytes: the most is %d", len(in.Code), host.MaxToolBytes)}}}, nil, nil
		}
		call := Call{Caller: c, Profile: p, Tool: tool,
			Digest: "sha256:" + digest, Input: inputJSON(in.Input)}
		if info := req.ClientInfo(); info != nil {
			call.MCPClient = info.Name
		}
		if req.Extra != nil {
			call.Header = req.Extra.Header
		}
		call.Criticality = metaCriticality(req.Params.GetMeta())
		if tp, ok := req.Params.Meta["traceparent"].(string); ok {
			call.TraceParent = tp
		}
		if req.Params.RequestState != "" {
			return s.resumeCall(ctx, req)
		}
		by := c.Name
		if by == "" {
			by = call.MCPClient // stdio: the initialize name is all there is
		}
		if req.Session != nil && canElicit(req.Session) && multiRoundTrip(req.Session) && p.Approvals.Allows(profiles.ChannelElicit) {
			return s.awaitRound(ctx, s.trips.start(ctx, req.Session, call, by, s.opts.Backend.Run))
		}
		if req.Session != nil {
			call.Elicit = ElicitApproval(req.Session, by)
		}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			pr := startProgress(ctx, req.Session, tok, s.opts.ProgressEvery)
			defer pr.stop()
			call.OnCall = pr.record
		}
		res := s.opts.Backend.Run(ctx, call)
		return s.result(res)
	}
}

// awaitRound answers with the run's result, or with a question for the client when the run
// waits on an approval first.
func (s *Server) awaitRound(ctx context.Context, r *suspended) (*mcp.CallToolResult, *Result, error) {
	res, ask := s.trips.await(ctx, r)
	if ask != nil {
		return ask, nil, nil
	}
	return s.result(res)
}

// resumeCall is a retry carrying an approval's answer and the state that binds it.
func (s *Server) resumeCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Result, error) {
	r, err := s.trips.resume(req.Session.ID(), req.Params, time.Now())
	if err != nil {
		s.opts.Logger.Warn("MCP approval state refused", "error", err.Error())
		return refusedState(err), nil, nil
	}
	return s.awaitRound(ctx, r)
}

// refusal is the answer to a call refused before its run: isError, with why.
func refusal(why string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: why}}}
}

// withDeadline ends ctx after the call's timeout, when it asks for one shorter than the
// profile's run_timeout (which ends the run in any case).
func withDeadline(ctx context.Context, timeout string, p *profiles.Profile) (context.Context, context.CancelFunc, error) {
	if timeout == "" {
		return ctx, func() {}, nil
	}
	d, err := time.ParseDuration(timeout)
	if err != nil || d <= 0 {
		return nil, nil, fmt.Errorf("timeout: %q is not a positive duration such as 5s or 500ms", timeout)
	}
	if d >= p.Limits.RunTimeout {
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

func inputJSON(in json.RawMessage) []byte {
	if len(in) == 0 {
		return []byte("null")
	}
	return in
}

// atLeast drops records below a level: the SDK logs every session at Info.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}
