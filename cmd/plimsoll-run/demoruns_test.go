package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDemoRuns runs `demo --runs 30 --seconds 2` for real: the chart has a row per 250 ms, every
// limit it draws is within the profile's 2–64, the first is below the knee (the limit starts at
// min 2), and the summary names the sheds per tier. How fast it learns is a figure
// (BENCHMARKS.md), not asserted here: it depends on the machine.
func TestDemoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s in real time")
	}
	var out, errb bytes.Buffer
	code := cli(context.Background(), []string{"demo", "--runs", "30", "--seconds", "2"}, env_("", &out, &errb, nil))
	require.Equal(t, 0, code, errb.String())
	rows := regexp.MustCompile(`(?m)^ *[0-9.]+s limit +([0-9]+) [#|]*`).FindAllStringSubmatch(out.String(), -1)
	require.GreaterOrEqual(t, len(rows), 4, out.String())
	for _, r := range rows {
		n, _ := strconv.Atoi(r[1])
		require.True(t, n >= 2 && n <= 64, r[0])
	}
	first, _ := strconv.Atoi(rows[0][1])
	require.Less(t, first, 16, "the limit starts low and learns: %s", out.String())
	require.Contains(t, out.String(), "shed critical ")
	require.True(t, strings.HasPrefix(out.String(), "plimsoll demo: 30 runs call one API for 2 s."))
}

func TestDemoRunsFlags(t *testing.T) {
	for _, args := range [][]string{{"--runs", "-1"}, {"--runs", "5", "--tool", "x.js"}, {"--runs", "5", "--seconds", "0"}} {
		var out, errb bytes.Buffer
		code := cli(context.Background(), append([]string{"demo"}, args...), env_("", &out, &errb, nil))
		require.Equal(t, exitConfig, code, args)
		require.Contains(t, errb.String(), "plimsoll-run demo: --", args)
	}
}
