package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// printFleet prints the fleet part of admin state: every replica's last heartbeat, marked.
func printFleet(w io.Writer, at time.Time, f *server.FleetState) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "\nfleet %s, this replica %s, profiles %s\n", f.Name, f.Replica, short(f.Digest))
	if f.Degraded != "" {
		fmt.Fprintf(w, "  DEGRADED: %s; the last known flags hold\n", f.Degraded)
	}
	if f.Warning != "" {
		fmt.Fprintf(w, "  WARNING: %s\n", f.Warning)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  REPLICA\tINSTANCE\tLIVE RUNS\tPROFILES\tLAST HEARTBEAT\tMARKS")
	for _, m := range f.Replicas {
		var marks []string
		for _, mk := range []struct {
			on   bool
			what string
		}{{m.Stale, "STALE"}, {m.DigestDiffers, "OTHER PROFILES"}, {m.NameShared, "NAME SHARED"}} {
			if mk.on {
				marks = append(marks, mk.what)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s ago\t%s\n", m.Replica, m.Instance, m.LiveRuns, short(m.Digest),
			at.Sub(m.At).Round(100*time.Millisecond), strings.Join(marks, ", "))
	}
	tw.Flush()
	printFleetWindows(w, at, f.Replicas)
	printFleetLimits(w, f.Replicas)
}

// printFleetWindows prints every replica's open breaker windows, by profile.
func printFleetWindows(w io.Writer, at time.Time, ms []fleet.Member) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := false
	for _, m := range ms {
		for _, win := range m.Windows {
			if !head {
				fmt.Fprintln(tw, "  BREAKER WINDOWS\tPROFILE\tSTATE\tRUNS\tOPENED\tUNTIL")
				head = true
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s ago\tin %s\n", m.Replica, win.Profile, win.State, win.Runs,
				at.Sub(win.OpenedAt).Round(time.Second), win.Until.Sub(at).Round(time.Second))
		}
	}
	tw.Flush()
}

// printFleetLimits prints every replica's API limits as its heartbeat carries them.
func printFleetLimits(w io.Writer, ms []fleet.Member) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := false
	for _, m := range ms {
		for _, l := range m.Limits {
			if !head {
				fmt.Fprintln(tw, "  API LIMITS\tPROFILE\tROUTE\tLEARNED\tDEMAND")
				head = true
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\n", m.Replica, l.Profile, cmp.Or(l.Route, "*"), l.Learned, l.Demand)
		}
	}
	tw.Flush()
}

// printFleetReload prints the other replicas' answers to a reload.
func printFleetReload(w io.Writer, f *server.FleetReload) {
	if f == nil {
		return
	}
	if f.Error != "" {
		fmt.Fprintf(w, "fleet: NOT SENT: %s; only this replica reloaded\n", f.Error)
	}
	for _, r := range f.Replicas {
		mark := ""
		if r.Differs {
			mark = " (OTHER PROFILES than this replica's " + short(f.Digest) + ")"
		}
		if r.Error != "" {
			mark += " reload FAILED: " + r.Error
		}
		fmt.Fprintf(w, "fleet: replica %s reloaded, profiles %s%s, %d refused\n", r.Replica, short(r.Digest), mark, r.Refused)
	}
	if len(f.Missing) > 0 {
		fmt.Fprintf(w, "fleet: NO ANSWER from %s\n", strings.Join(f.Missing, ", "))
	}
}

// short is a digest's first 12 hex digits, enough to tell profile sets apart by eye.
func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}
