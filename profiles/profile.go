// Package profiles loads grant profiles: the named, operator-written permission for a run to call
// listed routes of one API with one credential.
package profiles

import (
	"net/url"
	"time"
)

// Profile is one validated grant profile. It is immutable after Load.
type Profile struct {
	Name       string     // the file's base name without extension
	File       string     // where it was loaded from
	BaseURL    *url.URL   // scheme, host, port and path only
	Credential Credential // how the secret reaches the upstream
	Routes     []Route    // compiled at load, in file order
	// RequestHeaders are the headers a tool may send beyond DefaultRequestHeaders; canonical.
	RequestHeaders []string
	HealthCheck    *Route // optional; a GET of a concrete path
	Preamble       string // optional; absolute path of a generated client library
	PreamblePython string // optional; absolute path of a generated Python client (specgen)
	Budget         Budget // forwarded calls per run
	Limits         Limits // resource limits, defaults filled in
	Description    string // optional; what the grant is for, shown to the daemon's clients
	// Concurrency is the optional limit on calls in flight to the API across runs; nil when off.
	Concurrency *Concurrency
	// Approvals marks routes whose calls wait for a person; nil (the default) gates nothing.
	Approvals *Approvals

	PropagateTrace bool // optional; forwarded calls carry the run's W3C traceparent upstream
}

// Credential says where the secret comes from and how it is sent. The secret itself is resolved
// only at run start (see Resolve) and never stored here.
type Credential struct {
	Header string // default "Authorization"
	Scheme string // optional, e.g. "Bearer"; sent as "Scheme secret"
	Env    string // read from this environment variable, or
	File   string // read from this file (trailing newline trimmed)
}

// Budget caps what one run may spend.
type Budget struct {
	Calls int // forwarded calls per run
}

// Limits bound one run's resources.
type Limits struct {
	RunTimeout       time.Duration // whole run
	CallTimeout      time.Duration // one forwarded call, headers and body
	Memory           int64         // guest linear memory, bytes
	MaxResponseBytes int64         // upstream body cap
	MaxRequestBytes  int64         // request envelope cap
	MaxOutputBytes   int64         // guest stdout cap
	MaxLogBytes      int64         // guest stderr cap
	MaxHostCalls     int           // host_call invocations per run, any outcome
	MaxInflight      int           // concurrent calls in flight at once (ABI v2), 1–MaxInflightLimit
}

// MaxInflightLimit bounds limits.max_inflight: each call in flight holds a goroutine, a
// connection and up to limits.max_response_bytes of host memory.
const MaxInflightLimit = 64

// Defaults for Limits and Budget.
var DefaultLimits = Limits{
	RunTimeout:       30 * time.Second,
	CallTimeout:      10 * time.Second,
	Memory:           256 << 20,
	MaxResponseBytes: 8 << 20,
	MaxRequestBytes:  1 << 20,
	MaxOutputBytes:   1 << 20,
	MaxLogBytes:      1 << 20,
	MaxHostCalls:     1000,
	MaxInflight:      8,
}

const DefaultBudgetCalls = 100

// OrDefaults returns l with every zero or negative field set to its default, for limits built in
// code rather than loaded (Load always fills them).
func (l Limits) OrDefaults() Limits {
	d := DefaultLimits
	pick := func(v, def int64) int64 {
		if v <= 0 {
			return def
		}
		return v
	}
	l.RunTimeout = time.Duration(pick(int64(l.RunTimeout), int64(d.RunTimeout)))
	l.CallTimeout = time.Duration(pick(int64(l.CallTimeout), int64(d.CallTimeout)))
	l.Memory = pick(l.Memory, d.Memory)
	l.MaxResponseBytes = pick(l.MaxResponseBytes, d.MaxResponseBytes)
	l.MaxRequestBytes = pick(l.MaxRequestBytes, d.MaxRequestBytes)
	l.MaxOutputBytes = pick(l.MaxOutputBytes, d.MaxOutputBytes)
	l.MaxLogBytes = pick(l.MaxLogBytes, d.MaxLogBytes)
	l.MaxHostCalls = int(pick(int64(l.MaxHostCalls), int64(d.MaxHostCalls)))
	l.MaxInflight = int(pick(int64(min(l.MaxInflight, MaxInflightLimit)), int64(d.MaxInflight)))
	return l
}

// Secret is a resolved credential. It never prints its value. The value sits behind a pointer:
// String and GoString cover %v, %s and %#v, and every other way fmt can reach it (%d, %t or %p,
// or a Secret in another struct's unexported field, printed by reflection) shows an address.
type Secret struct{ value *string }

func (s Secret) String() string   { return "[redacted]" }
func (s Secret) GoString() string { return "profiles.Secret{[redacted]}" }

// Value returns the secret itself; only the broker's forwarder and redactor call it.
func (s Secret) Value() string {
	if s.value == nil {
		return ""
	}
	return *s.value
}

// NewSecret wraps a value (for tests and embedders that resolve credentials themselves).
func NewSecret(v string) Secret { return Secret{value: &v} }
