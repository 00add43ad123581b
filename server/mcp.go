package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server/mcpserver"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// MCPSessionTimeout closes an MCP session idle this long; it fits the session caps (mcpguard.go).
const MCPSessionTimeout = 5 * time.Minute

// mcpHandler serves streamable HTTP MCP at /mcp, behind the /v1 bearer tokens: a client lists
// and calls the tools of its own profiles only, and its session is bound to it.
func (s *Server) mcpHandler() http.Handler {
	s.mcp = mcpserver.New(mcpserver.Options{Backend: mcpBackend{s}, Caller: s.mcpCaller, Logger: s.log})
	h := s.mcp.HTTPHandler(&mcp.StreamableHTTPOptions{Logger: s.log, SessionTimeout: MCPSessionTimeout,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
		// DNS rebinding reaches an open (tokenless, loopback) daemon from a browser; with tokens
		// the page has none, and a reverse proxy on loopback must be able to pass its own Host.
		DisableLocalhostProtection: s.clients != nil})
	if s.clients != nil {
		// The SDK's own middleware carries the client into the session (its UserID stops another
		// client's token from using the session); the token was checked just before.
		h = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
			c, _ := r.Context().Value(mcpClientKey{}).(*Client)
			if c == nil {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: c.Name, Extra: map[string]any{mcpClientExtra: c}}, nil
		}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	h = newMCPSessions(s.mcp.SessionIDs).guard(h, func(r *http.Request) string {
		return r.Context().Value(mcpClientKey{}).(*Client).Name
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		h.ServeHTTP(withWriteDeadlines(w), r.WithContext(context.WithValue(r.Context(), mcpClientKey{}, c)))
	})
}

type mcpClientKey struct{}

const mcpClientExtra = "plimsoll_client"

// mcpCaller is who sent an MCP request: the client its bearer token named, or anonymous with
// every profile in open mode.
func (s *Server) mcpCaller(extra *mcp.RequestExtra) (mcpserver.Caller, bool) {
	if s.clients == nil {
		return mcpserver.Caller{Name: openClient}, true
	}
	if extra == nil || extra.TokenInfo == nil {
		return mcpserver.Caller{}, false
	}
	c, _ := extra.TokenInfo.Extra[mcpClientExtra].(*Client)
	if c == nil {
		return mcpserver.Caller{}, false
	}
	return mcpserver.Caller{Name: c.Name, May: c.May}, true
}

// closeMCP ends the open MCP sessions, so that their streams do not hold the drain.
func (s *Server) closeMCP() {
	if s.mcp != nil {
		s.mcp.CloseSessions()
	}
}

// mcpBackend runs MCP tool calls as POST /v1/runs runs: the drain check, admission (the
// Plimsoll-Criticality header counts), the journal, the synced audit line, metrics and the
// recent-runs ring (GET /v1/runs/{id} answers an MCP run too, with its trace).
type mcpBackend struct{ s *Server }

func (b mcpBackend) Profiles() []*profiles.Profile { return b.s.store.Profiles() }

func (b mcpBackend) Profile(name string) (*profiles.Profile, bool) { return b.s.store.Get(name) }

func (b mcpBackend) Run(ctx context.Context, call mcpserver.Call) host.Result {
	s := b.s
	if !s.runs.enter() {
		return s.refuseMCP(call, refused(refusedDraining, errors.New("the daemon is shutting down: retry on another replica or after the restart")))
	}
	defer s.runs.leave()
	crit, err := mcpCriticality(call) // limits.go
	if err != nil {
		return s.refuseMCP(call, refused(refusedHeader, err))
	}
	client := s.mcpClient(call.Caller.Name)
	giveBack, err := s.takeRun(client) // quota.go
	if err != nil {
		return s.refuseMCP(call, refused(refusedQuota, err))
	}
	t0 := time.Now()
	release, err := s.adm.Acquire(ctx, crit)
	var shed *runqueue.ShedError
	switch {
	case errors.As(err, &shed):
		giveBack() // the run never ran: it does not count against the client
		s.metrics.shed(shed)
		return s.refuseMCP(call, refused(refusedBusy, fmt.Errorf("the daemon is busy (%s): retry in %ss", shed.Error(), retryBusy)))
	case err != nil:
		giveBack()
		return s.refuseMCP(call, refused(refusedCanceled, fmt.Errorf("canceled while waiting for a run slot: %w", err)))
	}
	defer release()
	s.metrics.queueWait.WithLabelValues(crit.String()).Observe(time.Since(t0).Seconds())

	runID := broker.NewRunID()
	if s.journal != nil {
		err := s.journal.Begin(journalEntry{RunID: runID, Client: call.Caller.Name, Profile: call.Profile.Name,
			Tool: call.Tool.Name, ToolDigest: call.Digest, Start: time.Now().UTC()})
		if err != nil {
			s.log.Error("journal write failed: run refused", "error", err.Error())
			giveBack()
			return s.refuseMCP(call, refused(refusedJournal, errors.New("the daemon cannot journal the run")))
		}
	}
	runCtx, cancel := s.runContext(ctx, 0)
	defer cancel()
	t1 := time.Now()
	opts := s.plane.runOptions(runID, call.Caller.Name, call.Profile.Name) // forced-open flags, live state
	opts.OnCall = call.OnCall
	opts.Quota = s.callsQuota(client)
	opts.Criticality = tierOf(crit) // the API limit's tier (limits.go)
	opts.Approver = s.plane.desk.approver(call.Caller.Name, call.Elicit)

	span := s.beginRun(&opts, call.TraceParent, call.Profile.Name, call.Caller.Name, call.Digest)
	res := s.rt.RunWith(runCtx, call.Tool, call.Profile, call.Input, opts)
	s.plane.ended(runID)
	span.end(res)
	res.Audit.Client, res.Audit.MCPClient = call.Caller.Name, call.MCPClient
	s.finishRecord(res, time.Since(t1))
	return res
}

// mcpClient is the clients-file entry an MCP caller authenticated as; in open mode, anonymous
// with no quota.
func (s *Server) mcpClient(name string) *Client {
	if s.clients != nil {
		if c := s.clients.named(name); c != nil {
			return c
		}
	}
	return &Client{Name: name}
}

// refuseMCP is a tool call the daemon did not run: counted, not audited (refusal.go).
func (s *Server) refuseMCP(call mcpserver.Call, err error) host.Result {
	s.countRefusal("mcp", err)
	return host.Result{Err: err, Audit: refusedAudit(call.Profile.Name, call.Tool.Name, err)}
}
