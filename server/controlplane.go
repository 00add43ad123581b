package server

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// The control plane decides: which runs are live, which profiles and routes an operator forced
// open, who holds the admin token, which approvals wait. What it reports is in adminstate.go.

// controlPlane is the daemon's operator state: live runs, forced-open flags, the admin token.
// It lives in server/; a run's broker is handed its profile's flag and never reaches up.
type controlPlane struct {
	flags      *forcedFlags
	adminToken *[32]byte // sha256 of --admin-token-env's token; nil when the admin plane has none
	// desk holds the approvals waiting on the admin channel (approvals.go).
	desk *approvalDesk

	mu       sync.Mutex
	live     map[string]*liveRun // by run id
	openings []Opening           // of ended runs, newest last, capped (seeing.go)

	routes *forcedFlags // forced-open flags per route pattern, keyed by routeKey (forceroute.go)
}

// liveRun is one run between its broker's start and its end.
type liveRun struct {
	client string
	state  func() broker.State
	view   host.LiveRun // trace and breaker events so far (seeing.go); nil until Watch
}

// newControlPlaneFor resolves the admin token, if the config names one.
func newControlPlaneFor(cfg Config) (*controlPlane, error) {
	cp := newControlPlane()
	if cfg.AdminTokenEnv == "" {
		return cp, nil
	}
	tok := strings.TrimSpace(cfg.Getenv(cfg.AdminTokenEnv))
	if len(tok) < MinTokenLength {
		return nil, &ConfigError{Flag: "admin-token-env", Reason: fmt.Sprintf("$%s must hold a token of at least %d characters", cfg.AdminTokenEnv, MinTokenLength)}
	}
	d := sha256.Sum256([]byte(tok))
	cp.adminToken = &d
	return cp, nil
}

func newControlPlane() *controlPlane {
	return &controlPlane{flags: newForcedFlags(), routes: newForcedFlags(), live: map[string]*liveRun{},
		desk: newApprovalDesk()}
}

// runOptions are a run's host options: its id, its profile's forced-open flag, and the hook
// that makes it a live run once its broker exists. Every run the daemon executes goes through
// it, and through ended when RunWith returns.
func (cp *controlPlane) runOptions(runID, client, profile string) host.RunOptions {
	return host.RunOptions{RunID: runID, ForcedOpen: cp.flags.cell(profile).read, ForcedRoute: cp.routeFlag(profile),
		Approver: cp.desk.approver(client, nil),
		OnStart: func(state func() broker.State) {
			cp.mu.Lock()
			cp.live[runID] = &liveRun{client: client, state: state}
			cp.mu.Unlock()
		}, Watch: func(v host.LiveRun) { cp.watch(runID, v) }}
}

// ended removes a run from the live runs.
func (cp *controlPlane) ended(runID string) {
	cp.mu.Lock()
	lr := cp.live[runID]
	delete(cp.live, runID)
	cp.mu.Unlock()
	cp.rememberOpenings(lr) // reads the broker: never under the plane's lock
}
