package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plimsoll/plimsoll/server"
)

func (c *adminCmd) approvalFlags(fs *flag.FlagSet, sub string) {
	fs.StringVar(&c.by, "by", "", "who answers (`NAME`), written in the call's trace; default the daemon's \"admin\"")
	if sub == "approve" {
		fs.StringVar(&c.hash, "hash", "", "approve only if the call's sha256 is `SHA256` (as approvals lists it)")
	} else {
		fs.StringVar(&c.reason, "reason", "", "why (`R`), written in the call's trace; the tool never sees it")
	}
}

// approvals lists, approves or declines approvals on the admin plane.
func (c adminCmd) approvals(ctx context.Context, sub, id string) int {
	path := "/admin/approvals/" + url.PathEscape(id) + "/" + sub
	switch sub {
	case "approvals":
		return c.do(ctx, "GET", "/admin/approvals", nil, c.printApprovals)
	case "decline":
		return c.do(ctx, "POST", path, server.ApprovalDecision{By: c.by, Reason: c.reason}, c.printDecided)
	}
	hash := c.hash
	if hash == "" {
		q, code := c.pendingApproval(ctx, id)
		if q == nil {
			return code
		}
		if !c.json {
			c.printApproval(tabwriter.NewWriter(c.e.stdout, 0, 0, 2, ' ', 0), *q)
		}
		hash = q.Hash
	}
	return c.do(ctx, "POST", path, server.ApprovalDecision{Hash: hash, By: c.by}, c.printDecided)
}

// pendingApproval reads approval id from the listing; nil with an exit code when it is not there.
func (c adminCmd) pendingApproval(ctx context.Context, id string) (*server.PendingApproval, int) {
	var found *server.PendingApproval
	quiet := c
	quiet.json = false
	code := quiet.do(ctx, "GET", "/admin/approvals", nil, func(b []byte) int {
		a, ok := answerAs[server.ApprovalsAnswer](c, b)
		if !ok {
			return exitTool
		}
		for i := range a.Approvals {
			if a.Approvals[i].ID == id {
				found = &a.Approvals[i]
			}
		}
		return exitOK
	})
	if found == nil && code == exitOK {
		fmt.Fprintf(c.e.stderr, "plimsoll-run admin approve: no pending approval %s: it was answered, timed out or never existed\n", id)
		code = exitTool
	}
	return found, code
}

func (c adminCmd) printApprovals(b []byte) int {
	a, ok := answerAs[server.ApprovalsAnswer](c, b)
	if !ok {
		return exitTool
	}
	if len(a.Approvals) == 0 {
		fmt.Fprintln(c.e.stdout, "no calls wait for approval")
		return exitOK
	}
	tw := tabwriter.NewWriter(c.e.stdout, 0, 0, 2, ' ', 0)
	for i, q := range a.Approvals {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		c.printApproval(tw, q)
	}
	return exitOK
}

// printApproval shows one waiting call; every field is the daemon's, and the summary is escaped
// by the broker.
func (c adminCmd) printApproval(tw *tabwriter.Writer, q server.PendingApproval) {
	target := q.Path
	if q.Query != "" {
		target += "?" + q.Query
	}
	tw.Flush()
	fmt.Fprintf(c.e.stdout, "%s  %s %s\n", q.ID, q.Method, target)
	fmt.Fprintf(tw, "  route\t%s (profile %s)\n", q.Route, q.Profile)
	fmt.Fprintf(tw, "  run\t%s, tool %s, client %s\n", q.RunID, q.Tool, q.Client)
	for _, h := range q.Headers {
		fmt.Fprintf(tw, "  header\t%s\n", h)
	}
	fmt.Fprintf(tw, "  body\t%s\n", q.Summary)
	fmt.Fprintf(tw, "  sha256\t%s\n", q.Hash)
	fmt.Fprintf(tw, "  waiting\t%s, refused at %s\n", (time.Duration(q.WaitingMs) * time.Millisecond).Round(time.Second), clock(q.Deadline))
	tw.Flush()
}

func (c adminCmd) printDecided(b []byte) int {
	d, ok := answerAs[server.ApprovalDecided](c, b)
	if !ok {
		return exitTool
	}
	verb := map[string]string{"granted": "approved: the call leaves now", "declined": "declined: the tool gets 403 approval_declined"}[d.Decision]
	fmt.Fprintf(c.e.stdout, "%s %s\n", d.ID, strings.TrimSpace(verb))
	return exitOK
}
