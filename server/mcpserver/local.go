package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Local is the Backend of a process that runs its own fixed set of profiles (plimsoll-run mcp
// on stdio): no admission beyond the runtime's own concurrency, no journal.
type Local struct {
	Runtime *host.Runtime
	Served  []*profiles.Profile
	Audit   func(line []byte) // writes one audit line (AuditLine)

	running sync.WaitGroup
}

// Wait returns when no run is in flight: a client that hung up mid-call still gets its runs
// audited before the process exits.
func (l *Local) Wait() { l.running.Wait() }

// Profiles implements Backend.
func (l *Local) Profiles() []*profiles.Profile { return l.Served }

// Profile implements Backend.
func (l *Local) Profile(name string) (*profiles.Profile, bool) {
	for _, p := range l.Served {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Run implements Backend.
func (l *Local) Run(ctx context.Context, c Call) host.Result {
	l.running.Add(1)
	defer l.running.Done()
	tier, err := bulkhead.ParseTier(c.Criticality)
	if err != nil {
		res := host.Result{Err: fmt.Errorf("_meta %s: %w", MetaCriticality, err)}
		res.Audit = broker.NewAudit("", c.Profile.Name, c.Tool.Name, broker.StatusError, res.Err)
		l.Audit(AuditLine(res.Audit, c.Caller.Name, c.MCPClient))
		return res
	}
	res := l.Runtime.RunWith(ctx, c.Tool, c.Profile, c.Input, host.RunOptions{OnCall: c.OnCall, Criticality: tier})
	l.Audit(AuditLine(res.Audit, c.Caller.Name, c.MCPClient))
	return res
}

// AuditLine is a run's audit line with the MCP caller: client (the clients-file name; left out
// when there is none, over stdio) and mcp_client (the initialize request's client name).
func AuditLine(a broker.Audit, client, mcpClient string) []byte {
	b, err := json.Marshal(struct {
		broker.Audit
		Client    string `json:"client,omitempty"`
		MCPClient string `json:"mcp_client"`
	}{a, client, mcpClient})
	if err != nil {
		b = []byte(`{"status":"error","error":"audit encoding failed"}`) // unreachable: strings and numbers
	}
	return append(b, '\n')
}
