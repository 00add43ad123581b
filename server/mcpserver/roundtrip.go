package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Multi-round-trip approvals (MCP 2026-07-28, SEP-2322): a server may no longer send an
// elicitation while it serves a tools/call. The tool result asks for the input instead, and the
// client retries the call with the answer and the state the result carried. The run goes on in
// the background meanwhile (its other calls too); the state names it, and is signed, bound to the
// session, single-use and expires with the approval.

// roundTripVersion is the first protocol version that forbids server-initiated elicitation.
const roundTripVersion = "2026-07-28"

func multiRoundTrip(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= roundTripVersion
}

// Why a retry's requestState is refused. The run's approval is not answered by a refused state:
// it times out and is refused, as any unanswered approval.
var (
	ErrStateTampered = errors.New("requestState is not one this server signed")
	ErrStateForeign  = errors.New("requestState belongs to another session")
	ErrStateExpired  = errors.New("requestState has expired: the approval it answers timed out")
	ErrStateReplayed = errors.New("requestState was already used, or the approval it answers no longer waits (timed out, or its run ended)")
)

// roundState is what a requestState carries.
type roundState struct {
	Run      string `json:"run"`
	Session  string `json:"session"`
	Approval string `json:"approval"`
	Nonce    string `json:"nonce"`
	Expires  int64  `json:"exp"` // unix ms
}

// stateSigner signs states with a key that lives as long as the process: a restart forgets
// every suspended run anyway.
type stateSigner struct{ key [32]byte }

func newStateSigner() *stateSigner {
	s := &stateSigner{}
	_, _ = rand.Read(s.key[:])
	return s
}

func (s *stateSigner) sign(st roundState) string {
	payload, _ := json.Marshal(st)
	m := hmac.New(sha256.New, s.key[:])
	m.Write(payload)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(m.Sum(nil))
}

func (s *stateSigner) open(token string) (roundState, error) {
	var st roundState
	enc := base64.RawURLEncoding
	p, sig, ok := strings.Cut(token, ".")
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil {
		return st, ErrStateTampered
	}
	m := hmac.New(sha256.New, s.key[:])
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) || json.Unmarshal(payload, &st) != nil {
		return st, ErrStateTampered
	}
	return st, nil
}

// ask is one approval the run wants the client to answer.
type ask struct {
	q     broker.ApprovalRequest
	reply chan broker.ApprovalAnswer // buffered: an answer after the wait ended is dropped
}

// suspended is a run that may outlive the tools/call request that started it.
type suspended struct {
	id      string
	session string
	owner   *mcp.ServerSession // the session that started it: its end cancels the run
	asks    chan ask
	done    chan host.Result // buffered
	cancel  context.CancelFunc
	ended   atomic.Bool

	mu      sync.Mutex
	waiting *ask   // the ask the last input-required result carried
	nonce   string // that result's state; "" once used
	expires time.Time
}

// elicitor asks through the tool result: the run's approver blocks until a retry answers.
func (r *suspended) elicitor(by string) Elicitor {
	return func(ctx context.Context, q broker.ApprovalRequest) (broker.ApprovalAnswer, bool) {
		a := ask{q: q, reply: make(chan broker.ApprovalAnswer, 1)}
		timeout := broker.ApprovalAnswer{Decision: broker.ApprovalTimeout, Channel: profiles.ChannelElicit}
		select {
		case r.asks <- a:
		case <-ctx.Done():
			return timeout, true
		}
		select {
		case ans := <-a.reply:
			ans.By = "mcp:" + by
			return ans, true
		case <-ctx.Done():
		}
		r.mu.Lock() // no retry is taken for this ask from now on
		if r.waiting != nil && r.waiting.reply == a.reply {
			r.waiting, r.nonce = nil, ""
		}
		r.mu.Unlock()
		select {
		case ans := <-a.reply: // a retry taken as the wait ended: its client was told so
			ans.By = "mcp:" + by
			return ans, true
		default:
			return timeout, true
		}
	}
}

// roundTrips holds the suspended runs of one MCP server.
type roundTrips struct {
	signer  *stateSigner
	mu      sync.Mutex
	runs    map[string]*suspended
	watched map[*mcp.ServerSession]bool // sessions whose end is watched (watch)
}

func newRoundTrips() *roundTrips {
	return &roundTrips{signer: newStateSigner(), runs: map[string]*suspended{}, watched: map[*mcp.ServerSession]bool{}}
}

// watch cancels a session's suspended runs once the session ends: nobody is left to answer their
// questions, and a run the client left ends as one whose request was canceled does, instead of
// holding the process (plimsoll-run mcp waits for its runs) until its approvals time out. One
// goroutine a session, for the session's life.
func (rt *roundTrips) watch(ss *mcp.ServerSession) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.watched[ss] {
		return
	}
	rt.watched[ss] = true
	go func() {
		_ = ss.Wait()
		rt.mu.Lock()
		delete(rt.watched, ss)
		var left []*suspended
		for id, r := range rt.runs {
			if r.owner == ss {
				left = append(left, r)
				delete(rt.runs, id) // no retry can come: its state is bound to the session
			}
		}
		rt.mu.Unlock()
		for _, r := range left {
			r.cancel()
		}
	}()
}

// start runs call in the background, detached from the request (the run must outlive it), and
// registers it; entries whose run ended and whose state expired are dropped now.
func (rt *roundTrips) start(ctx context.Context, ss *mcp.ServerSession, call Call, by string, run func(context.Context, Call) host.Result) *suspended {
	var id [8]byte
	_, _ = rand.Read(id[:])
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &suspended{id: hex.EncodeToString(id[:]), session: ss.ID(), owner: ss, asks: make(chan ask),
		done: make(chan host.Result, 1), cancel: cancel}
	call.Elicit = r.elicitor(by)
	rt.mu.Lock()
	now := time.Now()
	for k, old := range rt.runs {
		if old.ended.Load() && now.After(old.expiresAt()) {
			delete(rt.runs, k)
		}
	}
	rt.runs[r.id] = r
	rt.mu.Unlock()
	rt.watch(ss)
	go func() {
		defer cancel()
		res := run(runCtx, call)
		r.ended.Store(true)
		r.done <- res
	}()
	return r
}

func (r *suspended) expiresAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expires
}

// await waits for the run's end or its next question, whichever comes first. A client that
// gives up on the request cancels the run, as it would a run without approvals.
func (rt *roundTrips) await(ctx context.Context, r *suspended) (res host.Result, q *mcp.CallToolResult) {
	select {
	case res = <-r.done:
		rt.forget(r)
		return res, nil
	case a := <-r.asks:
		return res, rt.inputRequired(r, a)
	case <-ctx.Done():
		r.cancel()
		res = <-r.done
		rt.forget(r)
		return res, nil
	}
}

func (rt *roundTrips) forget(r *suspended) {
	rt.mu.Lock()
	delete(rt.runs, r.id)
	rt.mu.Unlock()
}

// inputRequired is the tool result that asks the client to approve a, with the state its retry
// must carry.
func (rt *roundTrips) inputRequired(r *suspended, a ask) *mcp.CallToolResult {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	st := roundState{Run: r.id, Session: r.session, Approval: a.q.ID, Nonce: hex.EncodeToString(nonce[:]),
		Expires: a.q.Deadline.UnixMilli()}
	r.mu.Lock()
	r.waiting, r.nonce, r.expires = &a, st.Nonce, a.q.Deadline
	r.mu.Unlock()
	return &mcp.CallToolResult{RequestState: rt.signer.sign(st), InputRequests: mcp.InputRequestMap{
		a.q.ID: &mcp.ElicitParams{Message: ApprovalMessage(a.q), RequestedSchema: approvalSchema}}}
}

// resume checks a retry's state and hands its answer to the waiting run: the signature, the
// session, the expiry, then single use.
func (rt *roundTrips) resume(session string, params *mcp.CallToolParamsRaw, now time.Time) (*suspended, error) {
	st, err := rt.signer.open(params.RequestState)
	switch {
	case err != nil:
		return nil, err
	case st.Session != session:
		return nil, ErrStateForeign
	case now.UnixMilli() >= st.Expires:
		return nil, ErrStateExpired
	}
	rt.mu.Lock()
	r := rt.runs[st.Run]
	rt.mu.Unlock()
	if r == nil {
		return nil, ErrStateReplayed
	}
	r.mu.Lock()
	a := r.waiting
	if a == nil || r.nonce != st.Nonce || a.q.ID != st.Approval {
		r.mu.Unlock()
		return nil, ErrStateReplayed
	}
	r.waiting, r.nonce = nil, ""
	a.reply <- answerOf(params.InputResponses[st.Approval]) // under the lock: see elicitor
	r.mu.Unlock()
	return r, nil
}

// answerOf maps the client's elicitation answer; anything but an accept is a refusal.
func answerOf(resp mcp.InputResponse) broker.ApprovalAnswer {
	ans := broker.ApprovalAnswer{Decision: broker.ApprovalCanceled, Channel: profiles.ChannelElicit}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		ans.Reason = "the retry carried no answer to the approval"
		return ans
	}
	switch res.Action {
	case "accept":
		ans.Decision = broker.ApprovalGranted
	case "decline":
		ans.Decision = broker.ApprovalDeclined
	}
	if note, ok := res.Content["note"].(string); ok {
		ans.Reason = note
	}
	return ans
}

// refusedState is the tool error a retry with a refused state gets.
func refusedState(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("approval not accepted: %v", err)}}}
}
