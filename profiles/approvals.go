package profiles

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Approvals marks granted routes whose calls wait for a person before they leave. A nil
// *Approvals (the default) gates nothing.
type Approvals struct {
	Routes    []Route       // each also granted, word for word, under routes
	Timeout   time.Duration // one wait; no answer by then is a refusal
	MaxPerRun int           // approvals a run may ask for; the next gated call is refused unasked
	Channels  []string      // how a person may answer, in order of preference
	// WallClockCap bounds a run's whole life, waits included; limits.run_timeout counts only
	// the time no call waits for a person. Default: run_timeout + max_per_run × timeout.
	WallClockCap time.Duration
}

// Approval channels.
const (
	ChannelElicit = "elicit" // MCP form elicitation to the client that started the run
	ChannelAdmin  = "admin"  // the admin plane: /admin/approvals and plimsoll-run admin approve
)

// Defaults of an approvals block: the timeout stays under MCP clients' usual 60 s request
// timeout, so an elicitation is answered or refused before the client gives up on the run.
const (
	DefaultApprovalTimeout  = 50 * time.Second
	DefaultApprovalsPerRun  = 5
	MaxApprovalTimeout      = 10 * time.Minute
	approvalsMaxPerRunLimit = 100
)

// DefaultApprovalChannels is every channel, elicitation first.
var DefaultApprovalChannels = []string{ChannelElicit, ChannelAdmin}

// Gated returns the approval route that method and path fall under, if any. Every approval
// route is tried, not just the first granted route that matches: a call under two granted
// patterns is gated when either is marked.
func (a *Approvals) Gated(method, path string) (*Route, bool) {
	if a == nil {
		return nil, false
	}
	for i := range a.Routes {
		if a.Routes[i].Match(method, path) {
			return &a.Routes[i], true
		}
	}
	return nil, false
}

// Allows reports whether channel is one the profile lists.
func (a *Approvals) Allows(channel string) bool {
	return a != nil && slices.Contains(a.Channels, channel)
}

func (d *decoder) approvals(v any, granted []Route, runTimeout time.Duration) *Approvals {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("approvals", "must be a mapping with routes, and optionally timeout, max_per_run and channels")
		return nil
	}
	d.unknown("approvals", m, []string{"routes", "timeout", "max_per_run", "channels", "wall_clock_cap"})
	a := &Approvals{Timeout: DefaultApprovalTimeout, MaxPerRun: DefaultApprovalsPerRun,
		Channels: DefaultApprovalChannels}
	a.Routes = d.approvalRoutes(m["routes"], granted)
	d.duration("approvals.timeout", m["timeout"], &a.Timeout)
	if a.Timeout > MaxApprovalTimeout {
		d.fail("approvals.timeout", "%s is over the %s cap: a run must not hold its slot longer", a.Timeout, MaxApprovalTimeout)
	}
	if n, ok := d.count("approvals.max_per_run", m["max_per_run"]); ok {
		if n < 1 || n > approvalsMaxPerRunLimit {
			d.fail("approvals.max_per_run", "must be from 1 to %d", approvalsMaxPerRunLimit)
		}
		a.MaxPerRun = n
	}
	if c, ok := m["channels"]; ok {
		a.Channels = d.channels(c)
	}
	a.WallClockCap = runTimeout + time.Duration(a.MaxPerRun)*a.Timeout
	d.duration("approvals.wall_clock_cap", m["wall_clock_cap"], &a.WallClockCap)
	if a.WallClockCap < runTimeout {
		d.fail("approvals.wall_clock_cap", "%s is under limits.run_timeout (%s): the cap bounds the run's life, waits included", a.WallClockCap, runTimeout)
	}
	return a
}

// approvalRoutes are routes that must appear under routes exactly as written: marking a route
// that is not granted would read as a grant it is not.
func (d *decoder) approvalRoutes(v any, granted []Route) []Route {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		d.fail("approvals.routes", "must be a non-empty list of granted \"METHOD /path\"")
		return nil
	}
	out := make([]Route, 0, len(list))
	for i, item := range list {
		field := fmt.Sprintf("approvals.routes[%d]", i)
		s, ok := d.str(field, item, true)
		if !ok {
			continue
		}
		j := slices.IndexFunc(granted, func(r Route) bool { return r.String() == s })
		if j < 0 {
			d.fail(field, "%q is not granted under routes (write it there word for word)", s)
			continue
		}
		if slices.ContainsFunc(out, func(r Route) bool { return r.String() == s }) {
			d.fail(field, "%q is listed twice", s)
		}
		out = append(out, granted[j])
	}
	return out
}

func (d *decoder) channels(v any) []string {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		d.fail("approvals.channels", "must be a non-empty list of %s and %s", ChannelElicit, ChannelAdmin)
		return nil
	}
	var out []string
	for i, item := range list {
		field := fmt.Sprintf("approvals.channels[%d]", i)
		s, ok := d.str(field, item, true)
		switch {
		case !ok:
		case s != ChannelElicit && s != ChannelAdmin:
			d.fail(field, "%q is not a channel (known: %s)", s, strings.Join(DefaultApprovalChannels, ", "))
		case slices.Contains(out, s):
			d.fail(field, "%q is listed twice", s)
		default:
			out = append(out, s)
		}
	}
	return out
}
