package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/hostfuncs"
)

// Sentinels for errors.Is. Every Result.Err matches at most one of them.
var (
	ErrTimeout = errors.New("run timed out")              // status timeout; see *TimeoutError
	ErrLimit   = errors.New("run limit reached")          // status limit; see *LimitError
	ErrClosed  = errors.New("host runtime is closed")     // status error
	ErrSetup   = errors.New("run could not be set up")    // status error; see *SetupError
	ErrCancel  = errors.New("run canceled by the caller") // status error; also matches context.Canceled
)

// TimeoutError is a run that passed its deadline: the profile's limits.run_timeout, or the
// caller's context deadline when that came first. It matches ErrTimeout and
// context.DeadlineExceeded.
type TimeoutError struct {
	Limit string        // "limits.run_timeout", or "" for the caller's deadline
	After time.Duration // the run timeout; zero for the caller's deadline
}

func (e *TimeoutError) Error() string {
	if e.Limit == "" {
		return "run timed out: the caller's deadline passed"
	}
	return fmt.Sprintf("run timed out: %s (%s) passed", e.Limit, e.After)
}

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// LimitError is a run stopped by a resource limit. Limit names it: a profile field such as
// "limits.memory", "limits.max_output_bytes", "limits.max_log_bytes" or "limits.max_host_calls",
// or "guest" for a limit the guest enforces itself (the JavaScript call-stack depth).
type LimitError struct {
	Limit   string
	Message string // says what was reached, naming Limit
	Err     error  // the underlying error, if any (e.g. *hostfuncs.CallLimitError)
}

func (e *LimitError) Error() string        { return e.Message }
func (e *LimitError) Unwrap() error        { return e.Err }
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// ToolError is a tool that failed: it threw, returned non-zero, exited non-zero, or trapped.
// Message is the reason the guest wrote last on its log, or the trap.
type ToolError struct {
	ExitCode int // the reactor's run result or the command's exit code; -1 for a trap
	Message  string
}

func (e *ToolError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("tool failed with exit code %d", e.ExitCode)
	}
	return "tool failed: " + e.Message
}

// SetupError is a run that failed before the guest started: no profile, an unresolvable
// credential, an unreadable preamble, input that is not JSON, a module that does not compile or
// imports something plimsoll does not provide. It matches ErrSetup and wraps the cause.
type SetupError struct {
	Step string // what was being done, e.g. "resolve the credential"
	Err  error
}

func (e *SetupError) Error() string        { return e.Step + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error        { return e.Err }
func (e *SetupError) Is(target error) bool { return target == ErrSetup }

func setupError(step string, err error) error { return &SetupError{Step: step, Err: err} }

// canceled is a run whose caller canceled it.
type canceled struct{ cause error }

func (e *canceled) Error() string {
	if e.cause != nil && e.cause != context.Canceled {
		return "run canceled by the caller: " + e.cause.Error()
	}
	return "run canceled by the caller"
}
func (e *canceled) Is(target error) bool { return target == ErrCancel || target == context.Canceled }

// statusOf maps a run's error to the status on its audit line. It is the only place that does.
func statusOf(err error) broker.Status {
	switch {
	case err == nil:
		return broker.StatusOK
	case errors.Is(err, ErrLimit):
		return broker.StatusLimit
	case errors.Is(err, ErrTimeout):
		return broker.StatusTimeout
	default:
		return broker.StatusError
	}
}

// callLimit turns the host functions' record of a stopped guest into a LimitError.
func callLimit(err error) error {
	var cl *hostfuncs.CallLimitError
	if errors.As(err, &cl) {
		return &LimitError{Limit: "limits.max_host_calls", Message: cl.Error(), Err: err}
	}
	return err
}

// contextError says why a run's context ended: its own cause (a limit, the run timeout), or the
// caller's deadline or cancelation.
func contextError(ctx context.Context) error {
	cause := context.Cause(ctx)
	var limit *LimitError
	var timeout *TimeoutError
	switch {
	case errors.As(cause, &limit), errors.As(cause, &timeout):
		return cause
	case errors.Is(cause, ErrClosed):
		return ErrClosed // Close ended the run
	case errors.Is(cause, context.DeadlineExceeded):
		return &TimeoutError{}
	default:
		return &canceled{cause: cause}
	}
}

// logReason is the reason a failed guest gave: the last line of its log that is not indented,
// with the indented lines after it (a JavaScript "Uncaught ..." and its stack). When goCrash is
// set (the guest exited with the Go runtime's code 2) it is the last "panic: ..." or
// "fatal error: ..." line, which a goroutine dump follows.
func logReason(log []byte, goCrash bool) string {
	const window, maxReason = 8 << 10, 2 << 10
	if len(log) > window {
		log = log[len(log)-window:]
	}
	lines := strings.Split(strings.TrimRight(strings.ToValidUTF8(string(log), "\uFFFD"), "\r\n\t "), "\n")
	for i := len(lines) - 1; goCrash && i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	start := len(lines) - 1
	for start > 0 && (lines[start] == "" || lines[start][0] == ' ' || lines[start][0] == '\t') {
		start--
	}
	reason := strings.TrimSpace(strings.Join(lines[start:], "\n"))
	if len(reason) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "…"
	}
	return reason
}
