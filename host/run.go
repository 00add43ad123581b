package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

// Run runs tool under profile p with input on the guest's stdin (for a JS tool, input is JSON
// and empty means null). It returns when the guest is done, and always with exactly one audit.
func (rt *Runtime) Run(ctx context.Context, tool Tool, p *profiles.Profile, input []byte) Result {
	return rt.RunWith(ctx, tool, p, input, RunOptions{})
}

// RunWith is Run with per-run options: a run id chosen by the caller, and hooks that see the
// trace and the log as the run goes.
func (rt *Runtime) RunWith(ctx context.Context, tool Tool, p *profiles.Profile, input []byte, opts RunOptions) Result {
	runID := opts.RunID
	if runID == "" {
		runID = broker.NewRunID()
	}
	if p == nil {
		return unbrokered(runID, "", tool, setupError("load the profile", errors.New("no profile given")))
	}
	if !rt.enter() {
		return rt.refused(runID, tool, p, ErrClosed)
	}
	defer rt.running.Done()

	select {
	case rt.slots <- struct{}{}:
		defer func() { <-rt.slots }()
	case <-ctx.Done():
		return rt.refused(runID, tool, p, contextError(ctx))
	}

	secret, secretErr := p.ResolveSecret(rt.getenv)
	clock := newActiveClock(p)
	opts.Approver = clock.wrap(opts.Approver)
	b, err := rt.newBroker(runID, tool, p, secret, opts)
	if err != nil {
		return unbrokered(runID, p.Name, tool, setupError("start the broker", err))
	}
	if opts.OnStart != nil {
		opts.OnStart(b.State)
	}
	if opts.Watch != nil {
		opts.Watch(b)
	}
	var res Result
	if secretErr != nil {
		err = setupError("resolve the credential", secretErr)
	} else {
		rt.executing.Add(1)
		res.Output, res.Log, err = rt.execute(ctx, b, tool, p, input, opts.OnLog, clock)
		if rt.executing.Add(-1) == 0 {
			select {
			case rt.idle <- struct{}{}:
			default:
			}
		}
	}
	res.Err = err
	res.Trace = b.Trace()
	res.BreakerEvents = b.BreakerEvents()
	res.Audit = b.Finish(statusOf(err), err)
	return res
}

// enter registers a run unless the runtime is closed.
func (rt *Runtime) enter() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed.Load() {
		return false
	}
	rt.running.Add(1)
	return true
}

func (rt *Runtime) newBroker(runID string, tool Tool, p *profiles.Profile, secret profiles.Secret, opts RunOptions) (*broker.Broker, error) {
	return broker.New(broker.Config{Profile: p, Secret: secret, Transport: rt.opts.Transport,
		Now: rt.opts.Now, RunID: runID, Tool: tool.Name, OnRecord: opts.OnCall, ForcedOpen: opts.ForcedOpen,
		Limits: rt.limits, Criticality: opts.Criticality, ForcedRoute: opts.ForcedRoute,
		Approver: opts.Approver, TraceParent: opts.TraceParent, Quota: opts.Quota})
}

// refused is the result of a run that never started; its broker records no calls.
func (rt *Runtime) refused(runID string, tool Tool, p *profiles.Profile, err error) Result {
	b, berr := rt.newBroker(runID, tool, p, profiles.Secret{}, RunOptions{})
	if berr != nil {
		return unbrokered(runID, p.Name, tool, err)
	}
	return Result{Err: err, Audit: b.Finish(statusOf(err), err)}
}

// unbrokered is the result of a run the broker cannot serve (no profile, or a profile it
// refuses); profile is "" when there is none.
func unbrokered(runID, profile string, tool Tool, err error) Result {
	return Result{Err: err, Audit: broker.NewAudit(runID, profile, tool.Name, statusOf(err), err)}
}

// belowMinimum is a memory limit smaller than what a module needs to start.
func belowMinimum(limit, need int64) error {
	return &LimitError{Limit: "limits.memory", Message: fmt.Sprintf(
		"memory limit limits.memory (%s) is below the %s the module needs to start",
		profiles.FormatSize(limit), profiles.FormatSize(need))}
}

// runState is one run inside the sandbox: what it runs, under which limits, and where its
// output, log and host calls go.
type runState struct {
	kind    guestKind
	guest   *guest
	limits  profiles.Limits
	ctx     context.Context // the run's: ends at the run timeout, the caller's deadline or a limit
	session *hostfuncs.Session
	stdout  *capped
	stderr  *capped
	inst    *instance
}

// execute runs the guest and says how it ended.
// clock, when set, makes the run timeout count active time (approvals; see deadline.go).
func (rt *Runtime) execute(ctx context.Context, b *broker.Broker, tool Tool, p *profiles.Profile, input []byte, onLog func([]byte), clock *activeClock) (out, log []byte, err error) {
	kind, ok := rt.kinds[tool.Kind()]
	if !ok {
		return nil, nil, setupError("load the tool", errors.New("the tool has no kind: build it with ToolFromSource or a kind's constructor"))
	}
	st := &runState{kind: kind, limits: p.Limits.OrDefaults()} // a profile built in code may leave fields zero

	// The run's context ends at the run timeout, the caller's deadline, or a limit hit by a
	// writer; its cause says which.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer context.AfterFunc(rt.closing, func() { stop(ErrClosed) })() // Close ends sleeps and calls too
	var cancel func()
	if clock != nil {
		runCtx, cancel = clock.deadline(runCtx, p)
	} else {
		runCtx, cancel = context.WithTimeoutCause(runCtx, st.limits.RunTimeout,
			&TimeoutError{Limit: "limits.run_timeout", After: st.limits.RunTimeout})
	}
	defer cancel()
	st.ctx = runCtx

	g, stdin, err := kind.load(runCtx, tool, p, st.limits, input)
	if err != nil {
		return nil, nil, err
	}
	if g.release != nil {
		defer g.release()
	}
	st.guest = g
	if g.minBytes > st.limits.Memory {
		return nil, nil, belowMinimum(st.limits.Memory, g.minBytes)
	}
	st.stdout = &capped{max: st.limits.MaxOutputBytes, what: "output", field: "limits.max_output_bytes", stop: stop}
	st.stderr = &capped{max: st.limits.MaxLogBytes, what: "log", field: "limits.max_log_bytes", stop: stop, onWrite: onLog}
	st.session = hostfuncs.NewSession(starter{b}, st.limits)

	ret, callErr := rt.call(st, stdin)
	st.session.Close() // calls still in flight end now, and are recorded before the audit line
	if st.inst != nil {
		defer st.inst.close(context.Background())
	}
	return st.stdout.buf.Bytes(), st.stderr.buf.Bytes(), rt.outcome(st, ret, callErr)
}

// call gets an instance (pooled, else fresh), binds it to the run and calls the guest's entry
// point. A fresh reactor runs _initialize first, under the run's context.
func (rt *Runtime) call(st *runState, stdin []byte) (int32, error) {
	if c, ok := st.kind.(caller); ok {
		return c.call(st, stdin)
	}
	memLimit := uint64(st.limits.Memory)
	callCtx := hostfuncs.WithSession(st.ctx, st.session)
	inst := st.kind.pooled(st.guest, memLimit)
	fresh := inst == nil
	if fresh {
		var err error
		if inst, err = rt.newInstance(callCtx, st.guest, memLimit); err != nil {
			return 0, rt.startError(st.ctx, err)
		}
	}
	st.inst = inst
	inst.mem.limit = memLimit
	inst.port.stdin, inst.port.stdout, inst.port.stderr, inst.port.ctx = bytes.NewReader(stdin), st.stdout, st.stderr, st.ctx

	if st.guest.entry == command {
		_, err := inst.mod.ExportedFunction(abi.ExportStart).Call(callCtx)
		return 0, err
	}
	if fresh {
		if err := inst.initialize(callCtx); err != nil {
			return 0, err
		}
	}
	res, err := inst.mod.ExportedFunction(abi.ExportRun).Call(callCtx)
	if err != nil {
		return 0, err
	}
	return int32(res[0]), nil
}

// starter is the run's broker as hostfuncs' Starter: ABI v2 calls are decided as they are
// submitted.
type starter struct{ *broker.Broker }

func (s starter) StartEnvelope(raw []byte) hostfuncs.Pending { return s.Broker.StartEnvelope(raw) }

var _ hostfuncs.Starter = starter{} // the run's broker takes the Starter path
