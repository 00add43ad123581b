package mcpserver

import (
	"context"
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
	Audit   func(line []byte) // writes one audit line (broker.Audit.Line)

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
		res.Audit.Client, res.Audit.MCPClient = c.Caller.Name, c.MCPClient
		l.Audit(res.Audit.Line())
		return res
	}
	res := l.Runtime.RunWith(ctx, c.Tool, c.Profile, c.Input, host.RunOptions{OnCall: c.OnCall, Criticality: tier,
		Approver: elicitOnly{c.Elicit}})
	res.Audit.Client, res.Audit.MCPClient = c.Caller.Name, c.MCPClient
	l.Audit(res.Audit.Line())
	return res
}
