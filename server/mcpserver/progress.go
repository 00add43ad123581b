package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/broker"
)

// progress sends one notification per guest call, at least every apart: calls that come
// sooner are folded into the next one ("… (+2 more)"). The guest never waits for the client:
// record only stores the entry, and one goroutine sends. Calls still folded when the run ends
// are not sent; the result's counts have them.
type progress struct {
	ctx   context.Context
	sess  *mcp.ServerSession
	token any
	every time.Duration

	mu      sync.Mutex
	n       int               // calls recorded
	last    broker.TraceEntry // the latest unsent one
	pending int               // calls recorded since the last notification
	wake    chan struct{}
	done    chan struct{}
	exited  chan struct{}
}

func startProgress(ctx context.Context, sess *mcp.ServerSession, token any, every time.Duration) *progress {
	p := &progress{ctx: ctx, sess: sess, token: token, every: every,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go p.loop()
	return p
}

// record is host.RunOptions.OnCall: it must not block.
func (p *progress) record(e broker.TraceEntry) {
	p.mu.Lock()
	p.n++
	p.pending++
	p.last = e
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop ends the loop and waits for a notification being sent.
func (p *progress) stop() {
	close(p.done)
	<-p.exited
}

func (p *progress) loop() {
	defer close(p.exited)
	var sent time.Time
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		}
		if wait := p.every - time.Since(sent); !sent.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-p.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		p.mu.Lock()
		n, e, folded := p.n, p.last, p.pending-1
		p.pending = 0
		p.mu.Unlock()
		if folded < 0 {
			continue // a wake for calls already sent
		}
		msg := CallMessage(e)
		if folded > 0 {
			msg += fmt.Sprintf(" (+%d more)", folded)
		}
		sent = time.Now()
		// A client that went away ends the run through its context; the error is not the run's.
		_ = p.sess.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: float64(n), Message: msg})
	}
}

// CallMessage says what happened to one guest call: "GET /pets/42 forwarded 200".
func CallMessage(e broker.TraceEntry) string {
	return fmt.Sprintf("%s %s %s %d", e.Method, e.Path, e.Outcome, e.Status)
}
