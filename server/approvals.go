package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server/mcpserver"
)

// approvalDesk holds the daemon's pending approvals on the admin channel: each waits here until
// an operator answers it (by id and call hash) or its run stops waiting.
type approvalDesk struct {
	mu      sync.Mutex
	pending map[string]*pendingApproval
}

type pendingApproval struct {
	q      broker.ApprovalRequest
	client string
	since  time.Time
	answer chan broker.ApprovalAnswer // buffered: the first answer wins, later ones find it gone
}

func newApprovalDesk() *approvalDesk {
	return &approvalDesk{pending: map[string]*pendingApproval{}}
}

// runApprover is one run's broker.Approver: elicitation first when the profile allows it and the
// client can answer, else the admin channel when the profile allows it, else no one.
type runApprover struct {
	desk   *approvalDesk
	client string
	elicit mcpserver.Elicitor // nil for /v1 runs and clients that cannot elicit
}

func (d *approvalDesk) approver(client string, e mcpserver.Elicitor) broker.Approver {
	return &runApprover{desk: d, client: client, elicit: e}
}

func (a *runApprover) Approve(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	if a.elicit != nil && slices.Contains(q.Channels, profiles.ChannelElicit) {
		if ans, ok := a.elicit(ctx, q); ok {
			return ans
		}
	}
	if slices.Contains(q.Channels, profiles.ChannelAdmin) {
		return a.desk.wait(ctx, q, a.client)
	}
	return broker.ApprovalAnswer{Decision: broker.ApprovalUnavailable,
		Reason: "no channel the profile allows can reach a person for this run"}
}

// wait puts q on the desk until an operator answers or ctx ends.
func (d *approvalDesk) wait(ctx context.Context, q broker.ApprovalRequest, client string) broker.ApprovalAnswer {
	p := &pendingApproval{q: q, client: client, since: time.Now(), answer: make(chan broker.ApprovalAnswer, 1)}
	d.mu.Lock()
	d.pending[q.ID] = p
	d.mu.Unlock()
	select {
	case ans := <-p.answer:
		return ans
	case <-ctx.Done():
	}
	d.mu.Lock()
	delete(d.pending, q.ID)
	d.mu.Unlock()
	select {
	case ans := <-p.answer: // taken by the desk as the wait ended: the operator was told so
		return ans
	default:
		return broker.ApprovalAnswer{Decision: broker.ApprovalTimeout, Channel: profiles.ChannelAdmin}
	}
}

// Errors of answering an approval on the admin channel.
var (
	ErrNoApproval   = errors.New("no pending approval with that id: it was answered, timed out or never existed")
	ErrHashMismatch = errors.New("the hash does not match the call waiting under that id: fetch the approval again and check what it sends")
)

// answer settles a pending approval. Approving needs the call's hash, so an operator approves
// exactly the call they were shown; declining does not.
func (d *approvalDesk) answer(id, hash string, ans broker.ApprovalAnswer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.pending[id]
	if !ok {
		return ErrNoApproval
	}
	if ans.Decision == broker.ApprovalGranted && subtle.ConstantTimeCompare([]byte(hash), []byte(p.q.Hash)) != 1 {
		return ErrHashMismatch
	}
	delete(d.pending, id) // answered once: a second answer finds nothing
	p.answer <- ans
	return nil
}

// PendingApproval is one call waiting on the admin channel, as GET /admin/approvals lists it.
type PendingApproval struct {
	broker.ApprovalRequest
	Client    string `json:"client"`
	WaitingMs int64  `json:"waiting_ms"`
}

// ApprovalsAnswer is GET /admin/approvals's answer, oldest first.
type ApprovalsAnswer struct {
	Approvals []PendingApproval `json:"approvals"`
}

func (d *approvalDesk) list() []PendingApproval {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PendingApproval, 0, len(d.pending))
	for _, p := range d.pending {
		out = append(out, PendingApproval{ApprovalRequest: p.q, Client: p.client, WaitingMs: time.Since(p.since).Milliseconds()})
	}
	slices.SortFunc(out, func(a, b PendingApproval) int { return int(b.WaitingMs - a.WaitingMs) })
	return out
}

func (s *Server) handleApprovals(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ApprovalsAnswer{Approvals: s.plane.desk.list()})
}

// ApprovalDecision is the body of POST /admin/approvals/{id}/approve|decline: the call's hash
// (required to approve), who answers (shown in the trace, never to the tool) and why.
type ApprovalDecision struct {
	Hash   string `json:"hash,omitempty"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ApprovalDecided is the answer to an approve or decline.
type ApprovalDecided struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// MaxApprovalText caps an operator's by and reason.
const MaxApprovalText = 200

func (s *Server) handleApprovalAnswer(decision string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		body, err := decodeDecision(r)
		if err != nil {
			refuseErr(w, err)
			return
		}
		if decision == broker.ApprovalGranted && body.Hash == "" {
			refuse(w, http.StatusBadRequest, "hash", "is required to approve: the call hash GET /admin/approvals shows")
			return
		}
		by := body.By
		if by == "" {
			by = "admin"
		}
		ans := broker.ApprovalAnswer{Decision: decision, Channel: profiles.ChannelAdmin, By: by, Reason: body.Reason}
		switch err := s.plane.desk.answer(id, body.Hash, ans); {
		case errors.Is(err, ErrNoApproval):
			refuse(w, http.StatusNotFound, "id", err.Error())
		case errors.Is(err, ErrHashMismatch):
			refuse(w, http.StatusConflict, "hash", err.Error())
		default:
			s.log.Info("approval answered on the admin plane", "id", id, "decision", decision, "by", by)
			writeJSON(w, http.StatusOK, ApprovalDecided{ID: id, Decision: decision})
		}
	}
}

func decodeDecision(r *http.Request) (ApprovalDecision, *RequestError) {
	var body ApprovalDecision
	if err := decodeAdminBody(r, &body, `{"hash": "...", "by": "...", "reason": "..."}`); err != nil {
		return body, err
	}
	for field, v := range map[string]string{"by": body.By, "reason": body.Reason} {
		switch {
		case len(v) > MaxApprovalText:
			return body, &RequestError{Status: http.StatusBadRequest, Field: field, Reason: "is over 200 bytes"}
		case strings.IndexFunc(v, func(c rune) bool { return !unicode.IsPrint(c) && c != ' ' }) >= 0:
			return body, &RequestError{Status: http.StatusBadRequest, Field: field, Reason: "has a control or format character"}
		}
	}
	return body, nil
}
