package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

func TestPrintFleetShowsWindowsAndLimitsPerReplica(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	beat := func(name string, st fleet.Status) fleet.Member {
		return fleet.Member{Beat: fleet.Beat{Replica: name, Instance: "i-" + name, At: at.Add(-time.Second), Status: st}}
	}
	f := &server.FleetState{Name: "prod", Replica: "a", Replicas: []fleet.Member{
		beat("a", fleet.Status{Limits: []fleet.APILimit{{Profile: "knee", Learned: 18, Demand: 7}}}),
		beat("b", fleet.Status{Windows: []fleet.Window{{Profile: "pets", State: "probing", Runs: 2,
			OpenedAt: at.Add(-12 * time.Second), Until: at.Add(18 * time.Second)}},
			Limits: []fleet.APILimit{{Profile: "knee", Route: "GET /slow/*", Learned: 4, Demand: 0}}}),
	}}
	var out bytes.Buffer
	printFleet(&out, at, f)
	fields := func(line string) string { return strings.Join(strings.Fields(line), " ") }
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		got = append(got, fields(l))
	}
	for _, want := range []string{
		"BREAKER WINDOWS PROFILE STATE RUNS OPENED UNTIL",
		"b pets probing 2 12s ago in 18s",
		"API LIMITS PROFILE ROUTE LEARNED DEMAND",
		"a knee * 18 7",
		"b knee GET /slow/* 4 0",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("admin state lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPrintFleetWithoutWindowsOrLimitsPrintsNoTables(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printFleet(&out, at, &server.FleetState{Name: "prod", Replica: "a", Replicas: []fleet.Member{{Beat: fleet.Beat{Replica: "a", At: at}}}})
	if s := out.String(); strings.Contains(s, "BREAKER WINDOWS") || strings.Contains(s, "API LIMITS") {
		t.Fatalf("empty tables printed:\n%s", s)
	}
}
