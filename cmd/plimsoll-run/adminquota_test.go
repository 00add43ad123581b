package main

import (
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/quota"
)

func TestPrintQuotas(t *testing.T) {
	end := time.Date(2026, 12, 4, 14, 3, 0, 0, time.UTC)
	var b strings.Builder
	printQuotas(&b, &server.QuotaState{WindowEnd: end, FleetShare: 3, Clients: []server.ClientQuota{
		{Client: "agent-b", RunsPerMinute: 6, CallsPerMinute: 100, Usage: []quota.Usage{
			{Client: "agent-b", Kind: quota.Runs, Local: 2, Others: 5, End: end}}},
	}})
	got := b.String()
	for _, want := range []string{
		"client quotas, window ends 14:03:00 UTC",
		"this replica admits 1/3 of each quota",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if f := strings.Fields(lines[len(lines)-2]); strings.Join(f, " ") != "agent-b runs 6 2 5 0" {
		t.Errorf("runs row %q: over the quota leaves 0", lines[len(lines)-2])
	}
	if f := strings.Fields(lines[len(lines)-1]); strings.Join(f, " ") != "agent-b calls 100 0 0 100" {
		t.Errorf("calls row %q", lines[len(lines)-1])
	}
	b.Reset()
	printQuotas(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no quotas print nothing, not %q", b.String())
	}
}
