package server

import (
	"errors"

	"github.com/plimsoll/plimsoll/broker"
)

// One rule for a request refused before its run starts, on /v1 and /mcp alike (SECURITY.md):
// the daemon draining or busy, the client gone while queued, a bad Plimsoll-Criticality, the
// journal failing, the client over its runs quota (quota.go). No run exists, so no audit line is written and no run id is given; the
// refusal counts once in plimsoll_refusals_total{surface,reason} (and, on /v1, in
// plimsoll_http_requests_total by code). Refusing stays cheap: a flood of requests the daemon
// sheds costs no disk write.

// Refusal reasons, the reason label.
const (
	refusedDraining = "draining"
	refusedBusy     = "busy"
	refusedCanceled = "canceled"
	refusedHeader   = "bad_criticality"
	refusedJournal  = "journal"
)

// refusedError is why a run was refused; reason is its label.
type refusedError struct {
	reason string
	err    error
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func refused(reason string, err error) error { return &refusedError{reason: reason, err: err} }

// countRefusal counts a refused run; surface is "v1" or "mcp".
func (s *Server) countRefusal(surface string, err error) {
	reason := "other"
	var re *refusedError
	if errors.As(err, &re) {
		reason = re.reason
	}
	s.metrics.refusals.WithLabelValues(surface, reason).Inc()
}

// refusedAudit is the (unwritten) record of a refused MCP call, for its tool result: no run id.
func refusedAudit(profile, tool string, err error) broker.Audit {
	a := broker.NewAudit("", profile, tool, broker.StatusError, err)
	a.RunID = ""
	return a
}
