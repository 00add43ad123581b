package host

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// outcome says how a guest call ended. Checks run from the most specific cause to the least: a
// limit the host enforced, the guest's own result, the run's context, a refused memory growth,
// and last the exit code or trap.
func (rt *Runtime) outcome(st *runState, ret int32, callErr error) error {
	var startErr *startFailure
	if errors.As(callErr, &startErr) {
		return startErr.err
	}
	if err := st.session.Err(); err != nil {
		return callLimit(err)
	}
	if st.stdout.err != nil {
		return st.stdout.err
	}
	if st.stderr.err != nil {
		return st.stderr.err
	}
	if err, ok := st.kind.ended(st, ret, callErr); ok {
		return err
	}
	log := st.stderr.buf.Bytes()
	if callErr == nil {
		if ret == 0 {
			return nil
		}
		return &ToolError{ExitCode: int(ret), Message: logReason(log, false)}
	}
	if rt.closed.Load() {
		return ErrClosed // wazero closes every module with exit code 0 when the runtime closes
	}
	var exit *sys.ExitError
	isExit := errors.As(callErr, &exit)
	if isExit && exit.ExitCode() == 0 {
		return nil
	}
	if st.ctx.Err() != nil {
		return contextError(st.ctx)
	}
	if st.inst.mem.refused != 0 {
		return memoryLimit(st.inst.mem.limit)
	}
	if isExit {
		return &ToolError{ExitCode: int(exit.ExitCode()), Message: logReason(log, exit.ExitCode() == 2)}
	}
	// A trap: a Go guest's panic aborts with "unreachable" after printing "panic: ...".
	trap, _, _ := strings.Cut(callErr.Error(), "\n")
	if reason := logReason(log, true); reason != "" {
		trap = reason + " (" + trap + ")"
	}
	return &ToolError{ExitCode: -1, Message: trap}
}

// startFailure is an instance that could not be created; outcome reports its error as it is.
type startFailure struct{ err error }

func (e *startFailure) Error() string { return e.err.Error() }

// startError says why instantiating a fresh instance failed.
func (rt *Runtime) startError(runCtx context.Context, err error) error {
	var limit *LimitError
	switch {
	case errors.As(err, &limit):
	case rt.closed.Load():
		err = ErrClosed
	case runCtx.Err() != nil:
		err = contextError(runCtx)
	default:
		err = setupError("instantiate the module", err)
	}
	return &startFailure{err: err}
}

// engineStopped reports a run an engine guest (QuickJS-ng, CPython) stopped at a limit, from the
// last line of its log: out of memory is the memory limit (or the host refused a growth), the
// deadline is the run's timeout (the host's own clock says so a moment later, if not already),
// anything else a guest limit such as the recursion depth.
func engineStopped(rt *Runtime, st *runState, memory, deadline string) error {
	const prefix = "plimsoll: limit: "
	last := bytes.TrimRight(st.stderr.buf.Bytes(), "\n")
	switch {
	case st.inst.mem.refused != 0 || bytes.HasSuffix(last, []byte(prefix+memory)):
		return memoryLimit(st.inst.mem.limit)
	case bytes.HasSuffix(last, []byte(prefix+deadline)):
		if rt.closed.Load() {
			return ErrClosed
		}
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-st.ctx.Done():
		case <-t.C:
		}
		if st.ctx.Err() != nil {
			return contextError(st.ctx)
		}
		return &TimeoutError{}
	}
	return guestLimit(st.stderr.buf.Bytes())
}
