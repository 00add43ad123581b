package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/quota"
)

// printQuotas prints the clients' quotas and their use in the current window.
func printQuotas(w io.Writer, q *server.QuotaState) {
	if q == nil {
		return
	}
	fmt.Fprintf(w, "\nclient quotas, window ends %s UTC\n", q.WindowEnd.UTC().Format("15:04:05"))
	if q.FleetShare > 1 {
		fmt.Fprintf(w, "  FLEET UNREACHABLE: this replica admits 1/%d of each quota on its own count\n", q.FleetShare)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLIENT\tKIND\tPER MINUTE\tHERE\tOTHER REPLICAS\tLEFT")
	for _, c := range q.Clients {
		for _, k := range []struct {
			kind  quota.Kind
			limit int
		}{{quota.Runs, c.RunsPerMinute}, {quota.Calls, c.CallsPerMinute}} {
			if k.limit == 0 {
				continue
			}
			var here, others int
			for _, u := range c.Usage {
				if u.Kind == k.kind {
					here, others = u.Local, u.Others
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\n", c.Client, k.kind, k.limit, here, others, max(0, k.limit-here-others))
		}
	}
	tw.Flush()
}
