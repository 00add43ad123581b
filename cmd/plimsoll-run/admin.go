package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plimsoll/plimsoll/server"
)

const adminSynopsis = `plimsoll-run admin state [--profile NAME] [--admin ADDR] [--token-env NAME] [--json]
       plimsoll-run admin force-open NAME [--route "METHOD /path"] --reason R [--operator NAME] [--admin ADDR] [--token-env NAME] [--json]
       plimsoll-run admin clear NAME [--route "METHOD /path"] [--admin ADDR] [--token-env NAME] [--json]
       plimsoll-run admin reload [--admin ADDR] [--token-env NAME] [--json]
` + limitsSynopsis + `
       plimsoll-run admin approvals [--admin ADDR] [--json]
       plimsoll-run admin approve ID [--hash SHA256] [--by NAME] [--admin ADDR] [--json]
       plimsoll-run admin decline ID [--reason R] [--by NAME] [--admin ADDR] [--json]

The daemon's admin plane (plimsoll-run serve --admin). A forced-open profile sheds every call of
its live and new runs until cleared; the flag survives profile reloads and is lost on restart.
With serve --admin-token-env, the token is read from $PLIMSOLL_ADMIN_TOKEN (or --token-env).
Exit codes: 0 done; 1 the daemon refused the request, or a reload refused a file; 2 usage, or
the daemon cannot be reached.

approvals lists the calls waiting for a person (profiles with an approvals block); approve lets
one leave, decline refuses it. approve without --hash shows the call and approves the hash the
daemon lists for ID; with --hash, only a call with exactly that hash is approved.`

// adminCmd is one admin subcommand's parsed flags.
type adminCmd struct {
	addr, tokenEnv, reason, profile string
	hash, by                        string
	json                            bool
	e                               env
	retune                          func() map[string]any // the retune flags given (adminlimits.go)
	route                           string                // force-open and clear per route pattern
	operator                        string                // sent as Plimsoll-Operator: who acted, kept in a fleet's bucket
}

func cmdAdmin(ctx context.Context, args []string, e env) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(e.stdout, "usage: %s\n", adminSynopsis)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "usage: %s\n", adminSynopsis)
		return exitConfig
	}
	sub, args := args[0], args[1:]
	c := adminCmd{e: e}
	fs := newFlags("admin "+sub, adminSynopsis, e)
	fs.StringVar(&c.addr, "admin", envOr(e, "PLIMSOLL_ADMIN", server.DefaultAdmin), "the daemon's admin `ADDR` (host:port or http://host:port; default $PLIMSOLL_ADMIN, else 127.0.0.1:7071)")
	fs.StringVar(&c.tokenEnv, "token-env", "PLIMSOLL_ADMIN_TOKEN", "environment variable `NAME` holding the admin token, if the daemon wants one")
	fs.BoolVar(&c.json, "json", false, "print the daemon's JSON answer, for scripts")
	fs.StringVar(&c.operator, "operator", e.getenv("USER"), "who acts (`NAME`, default $USER): sent as Plimsoll-Operator and kept with a fleet's flags")
	switch sub {
	case "state":
		fs.StringVar(&c.profile, "profile", "", "only profile `NAME`")
	case "force-open":
		fs.StringVar(&c.reason, "reason", "", "why (`R`): shown on every shed call and audit line")
		fs.StringVar(&c.route, "route", "", "only this granted route pattern, such as \"GET /pets/*\"")
	case "limits":
		fs.StringVar(&c.profile, "profile", "", "only profile `NAME`")
	case "retune":
		c.retune = retuneFlags(fs)
	case "clear":
		fs.StringVar(&c.route, "route", "", "the route pattern forced open with force-open --route")
	case "reload", "approvals":
	case "approve", "decline":
		c.approvalFlags(fs, sub)
	default:
		fmt.Fprintf(e.stderr, "plimsoll-run admin: unknown subcommand %q\n\nusage: %s\n", sub, adminSynopsis)
		return exitConfig
	}
	// NAME may come before or after the flags.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "plimsoll-run admin %s: unexpected argument %q\n", sub, fs.Arg(0))
		return exitConfig
	}
	needsName := sub == "force-open" || sub == "clear" || sub == "retune" || sub == "approve" || sub == "decline"
	switch {
	case needsName && name == "" && (sub == "approve" || sub == "decline"):
		fmt.Fprintf(e.stderr, "plimsoll-run admin %s: an approval ID is required (plimsoll-run admin approvals lists them)\n", sub)
		return exitConfig
	case needsName && name == "":
		fmt.Fprintf(e.stderr, "plimsoll-run admin %s: a profile NAME is required\n", sub)
		return exitConfig
	case !needsName && name != "":
		fmt.Fprintf(e.stderr, "plimsoll-run admin %s: unexpected argument %q\n", sub, name)
		return exitConfig
	case sub == "force-open" && strings.TrimSpace(c.reason) == "":
		fmt.Fprintf(e.stderr, "plimsoll-run admin force-open: --reason is required: say why, it is shown on every shed call and audit line\n")
		return exitConfig
	}
	if c.route != "" && (sub == "force-open" || sub == "clear") {
		return c.forceRoute(ctx, sub, name)
	}
	switch sub {
	case "state":
		q := ""
		if c.profile != "" {
			q = "?profile=" + url.QueryEscape(c.profile)
		}
		return c.do(ctx, "GET", "/admin/state"+q, nil, c.printState)
	case "force-open":
		return c.do(ctx, "POST", "/admin/profiles/"+url.PathEscape(name)+"/force-open", map[string]string{"reason": c.reason}, c.printForced)
	case "clear":
		return c.do(ctx, "DELETE", "/admin/profiles/"+url.PathEscape(name)+"/force-open", nil, c.printForced)
	case "limits":
		q := ""
		if c.profile != "" {
			q = "?profile=" + url.QueryEscape(c.profile)
		}
		return c.do(ctx, "GET", "/admin/limits"+q, nil, c.printLimits)
	case "retune":
		return c.do(ctx, "POST", "/admin/limits/"+url.PathEscape(name)+"/retune", c.retune(), c.printLimits)
	case "approvals", "approve", "decline":
		return c.approvals(ctx, sub, name)
	default:
		return c.do(ctx, "POST", "/admin/reload", nil, c.printReload)
	}
}

// do sends one request and prints the answer: raw with --json, else through print, which
// returns the exit code.
func (c adminCmd) do(ctx context.Context, method, path string, body any, print func([]byte) int) int {
	base := c.addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		fmt.Fprintf(c.e.stderr, "plimsoll-run admin: --admin %s: %v\n", c.addr, err)
		return exitConfig
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.operator != "" {
		req.Header.Set("Plimsoll-Operator", c.operator)
	}
	if tok := c.e.getenv(c.tokenEnv); tok != "" {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(c.e.stderr, "plimsoll-run admin: the daemon's admin plane at %s cannot be reached: %v\n", c.addr, err)
		return exitConfig
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		fmt.Fprintf(c.e.stderr, "plimsoll-run admin: reading the answer: %v\n", err)
		return exitTool
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error, Field string
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			if eb.Field != "" {
				eb.Error = eb.Field + ": " + eb.Error
			}
			fmt.Fprintf(c.e.stderr, "plimsoll-run admin: %s %s: %d %s\n", method, path, resp.StatusCode, eb.Error)
		} else {
			fmt.Fprintf(c.e.stderr, "plimsoll-run admin: %s %s: %s\n", method, path, resp.Status)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			fmt.Fprintln(c.e.stderr, c.tokenHint())
		}
		if c.json {
			c.e.stdout.Write(b)
		}
		return exitTool
	}
	if c.json {
		c.e.stdout.Write(b)
		code := exitOK
		var r struct{ Refused bool }
		if json.Unmarshal(b, &r) == nil && r.Refused {
			code = exitTool
		}
		return code
	}
	return print(b)
}

// tokenHint says where the admin token comes from, and whether it was found.
func (c adminCmd) tokenHint() string {
	if c.e.getenv(c.tokenEnv) == "" {
		return fmt.Sprintf("plimsoll-run admin: the daemon wants an admin token: set $%s to it (or name another variable with --token-env NAME)", c.tokenEnv)
	}
	return fmt.Sprintf("plimsoll-run admin: the daemon refused the token in $%s (--token-env names the variable): is it the one its --admin-token-env names?", c.tokenEnv)
}

// answerAs decodes the daemon's answer b; on failure it says so on stderr and ok is false.
func answerAs[T any](c adminCmd, b []byte) (a T, ok bool) {
	if err := json.Unmarshal(b, &a); err != nil {
		fmt.Fprintf(c.e.stderr, "plimsoll-run admin: the daemon's answer does not decode: %v\n", err)
		return a, false
	}
	return a, true
}

func (c adminCmd) printState(b []byte) int {
	st, ok := answerAs[server.AdminState](c, b)
	if !ok {
		return exitTool
	}
	w := c.e.stdout
	if len(st.Profiles) == 0 {
		fmt.Fprintln(w, "no profiles")
	}
	for i, p := range st.Profiles {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case p.Served:
			fmt.Fprintf(w, "%s  version %d, loaded %s\n", p.Name, p.Version, clock(p.LoadedAt))
		default:
			fmt.Fprintf(w, "%s  not served\n", p.Name)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "  last reload refused at %s: %s\n", clock(p.FailedAt), p.Error)
		}
		if f := p.ForcedOpen; f != nil {
			fmt.Fprintf(w, "  FORCED OPEN since %s (%s ago): %s\n", clock(f.Since), st.At.Sub(f.Since).Round(time.Second), f.Reason)
		}
		fmt.Fprintf(w, "  runs: %d live; since start %s\n", p.LiveRuns, statuses(p.Runs))
		fmt.Fprintf(w, "  breaker windows open: %d (429: %d)\n", p.BreakerWindowsOpen, p.BreakerWindows429)
		if len(p.Live) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tCLIENT\tTOOL\tELAPSED\tCALLS\tFWD\tSHED\tDENIED\tOVER\tINVALID\tFAILED\tIN FLIGHT\tBREAKER")
		for _, r := range p.Live {
			br := r.Breaker
			if !r.BreakerUntil.IsZero() {
				br += " until " + clock(r.BreakerUntil)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.RunID, r.Client, r.Tool,
				(time.Duration(r.ElapsedMs) * time.Millisecond).String(), r.HostCalls, r.Forwarded, r.Shed,
				r.Denied, r.OverBudget, r.Invalid, r.Failed, r.CallsInFlight, br)
		}
		tw.Flush()
	}
	printFleet(w, st.At, st.Fleet)
	printQuotas(w, st.Quotas) // adminquota.go
	return exitOK
}

func statuses(m map[string]int) string {
	var parts []string
	for _, s := range []string{"ok", "error", "timeout", "limit"} {
		parts = append(parts, fmt.Sprintf("%s %d", s, m[s]))
	}
	return strings.Join(parts, ", ")
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func (c adminCmd) printForced(b []byte) int {
	a, ok := answerAs[server.ForceOpenAnswer](c, b)
	if !ok {
		return exitTool
	}
	w := c.e.stdout
	switch {
	case a.ForcedOpen != nil:
		fmt.Fprintf(w, "%s forced open since %s: %s\n", a.Profile, clock(a.ForcedOpen.Since), a.ForcedOpen.Reason)
		fmt.Fprintf(w, "every call of its %d live run(s) and of new runs is shed until `plimsoll-run admin clear %s`\n", a.LiveRuns, a.Profile)
	case a.Was != nil:
		fmt.Fprintf(w, "%s cleared (was forced open since %s: %s); calls go to the breaker again\n", a.Profile, clock(a.Was.Since), a.Was.Reason)
	default:
		fmt.Fprintf(w, "%s was not forced open\n", a.Profile)
	}
	fmt.Fprintf(w, "note: %s\n", a.Note)
	return exitOK
}

func (c adminCmd) printReload(b []byte) int {
	a, ok := answerAs[server.ReloadAnswer](c, b)
	if !ok {
		return exitTool
	}
	w := c.e.stdout
	p := a.Profiles
	for _, ch := range p.Added {
		fmt.Fprintf(w, "profile %s added (%s), version %d\n", ch.Name, ch.File, ch.Version)
	}
	for _, ch := range p.Changed {
		fmt.Fprintf(w, "profile %s changed (%s), now version %d\n", ch.Name, ch.File, ch.Version)
	}
	for _, ch := range p.Removed {
		fmt.Fprintf(w, "profile %s removed (%s): no longer served\n", ch.Name, ch.File)
	}
	for _, r := range p.Refused {
		serving := "nothing served"
		if r.ServingVersion > 0 {
			serving = fmt.Sprintf("version %d still served", r.ServingVersion)
		}
		fmt.Fprintf(w, "profile %s REFUSED (%s): %s; %s\n", r.Name, r.File, r.Error, serving)
	}
	fmt.Fprintf(w, "%d profile file(s) unchanged\n", len(p.Unchanged))
	cl := a.Clients
	switch {
	case cl.Open:
		fmt.Fprintln(w, "clients: none (open mode), nothing to reload")
	case cl.Refused != nil:
		fmt.Fprintf(w, "clients REFUSED: %s; the clients before it stay\n", cl.Refused.Error())
	default:
		fmt.Fprintf(w, "clients: added %s; changed %s; removed %s\n", list(cl.Added), list(cl.Changed), list(cl.Removed))
	}
	printFleetReload(w, a.Fleet)
	if a.Refused {
		return exitTool
	}
	return exitOK
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
