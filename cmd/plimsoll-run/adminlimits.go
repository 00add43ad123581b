package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/plimsoll/plimsoll/server"
)

// `plimsoll-run admin limits` and `admin retune`: the per-API concurrency limits (issue 26).

const limitsSynopsis = `       plimsoll-run admin limits [--profile NAME] [--admin ADDR] [--token-env NAME] [--json]
       plimsoll-run admin retune NAME [--limit gradient2|aimd|N] [--min N] [--max N]
                                 [--max-queue N] [--queue-timeout D] [--admin ADDR] [--token-env NAME] [--json]`

// retuneFlags registers retune's flags; the returned body holds only the flags given.
func retuneFlags(fs *flag.FlagSet) func() map[string]any {
	fs.String("limit", "", "gradient2, aimd, or a whole number `N` for a fixed limit")
	fs.String("min", "", "the adaptive limit's floor `N`")
	fs.String("max", "", "the adaptive limit's ceiling `N`")
	fs.String("max-queue", "", "calls that may wait for a slot (`N`)")
	fs.String("queue-timeout", "", "a normal call's longest wait `D`, such as 2s")
	return func() map[string]any {
		body := map[string]any{}
		fs.Visit(func(f *flag.Flag) {
			key := map[string]string{"limit": "limit", "min": "min", "max": "max", "max-queue": "max_queue", "queue-timeout": "queue_timeout"}[f.Name]
			if key == "" {
				return
			}
			v := f.Value.String()
			if n, err := strconv.Atoi(v); err == nil && key != "queue_timeout" {
				body[key] = n
			} else {
				body[key] = v // the daemon names a bad value
			}
		})
		return body
	}
}

func (c adminCmd) printLimits(b []byte) int {
	a, ok := answerAs[server.LimitsAnswer](c, b)
	if !ok {
		return exitTool
	}
	w := c.e.stdout
	if len(a.Limits) == 0 {
		fmt.Fprintln(w, "no concurrency limits in use (a profile opts in with a concurrency block; its limit is made at its first call)")
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tROUTE\tALGORITHM\tLIMIT\tMIN-MAX\tIN FLIGHT\tQUEUED\tBASELINE\tSHED (crit/norm/shed)\tRETUNED")
	for _, l := range a.Limits {
		route := l.Route
		if route == "" {
			route = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d-%d\t%d\t%d/%d\t%.1fms\t%d/%d/%d\t%t\n", l.Profile, route, l.Algorithm, l.Limit,
			l.Min, l.Max, l.InFlight, l.Queued, l.MaxQueue, l.BaselineMs, l.Shed["critical"], l.Shed["normal"], l.Shed["sheddable"], l.Retuned)
	}
	tw.Flush()
	return exitOK
}

// forceRoute forces one route pattern of profile open, or clears it.
func (c adminCmd) forceRoute(ctx context.Context, sub, profile string) int {
	method, body := "POST", map[string]string{"route": c.route, "reason": c.reason}
	if sub == "clear" {
		method, body = "DELETE", map[string]string{"route": c.route}
	}
	return c.do(ctx, method, "/admin/profiles/"+url.PathEscape(profile)+"/routes/force-open", body, c.printForcedRoute)
}

func (c adminCmd) printForcedRoute(b []byte) int {
	a, ok := answerAs[server.ForceRouteAnswer](c, b)
	if !ok {
		return exitTool
	}
	w := c.e.stdout
	switch {
	case a.ForcedOpen != nil:
		fmt.Fprintf(w, "%s %s forced open since %s: %s\n", a.Profile, a.Route, clock(a.ForcedOpen.Since), a.ForcedOpen.Reason)
	case a.Was != nil:
		fmt.Fprintf(w, "%s %s cleared (was forced open since %s: %s)\n", a.Profile, a.Route, clock(a.Was.Since), a.Was.Reason)
	default:
		fmt.Fprintf(w, "%s %s was not forced open\n", a.Profile, a.Route)
	}
	fmt.Fprintf(w, "note: %s\n", a.Note)
	return exitOK
}
