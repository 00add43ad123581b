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

// TestDemoRuns runs `demo --runs 30 --seconds 2` for real: the chart has rows, every limit it
// draws is within the profile's 2–64, and the summary names the sheds per tier. Where the first
// row stands and how fast the limit learns are figures (BENCHMARKS.md), not asserted here: the
// first row comes at the first tick after the first call, and how many round trips the limit has
// learned from by then depends on the machine. That an adaptive limit starts at min is
// bulkhead's TestAdaptiveStartsAtMin.
func TestDemoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s in real time")
	}
	var out, errb bytes.Buffer
	code := cli(context.Background(), []string{"demo", "--runs", "30", "--seconds", "2"}, env_("", &out, &errb, nil))
	require.Equal(t, 0, code, errb.String())
	rows := regexp.MustCompile(`(?m)^ *[0-9.]+s limit +([0-9]+) [#|]*`).FindAllStringSubmatch(out.String(), -1)
	require.NotEmpty(t, rows, out.String())
	for _, r := range rows {
		n, _ := strconv.Atoi(r[1])
		require.True(t, n >= 2 && n <= 64, r[0])
	}
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
