package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var prefer = []string{"cpu-ns/call", "ms/run-median"}

func TestParseLine(t *testing.T) {
	cases := []struct {
		line  string
		want  measurement
		isRes bool
	}{
		{"BenchmarkHostCallJS-2   	    2000	     29011 ns/op	     29011 ns/call	     18011 cpu-ns/call", measurement{"BenchmarkHostCallJS", "cpu-ns/call", 18011}, true},
		{"BenchmarkJSRun/fresh-2  	    2000	    492288 ns/op	         0.3210 ms/run-median", measurement{"BenchmarkJSRun/fresh", "ms/run-median", 0.321}, true},
		{"BenchmarkX-16 100 12.5 ns/op 8 B/op 1 allocs/op", measurement{"BenchmarkX", "ns/op", 12.5}, true},
		{"BenchmarkNoProcs 100 7 ns/op", measurement{"BenchmarkNoProcs", "ns/op", 7}, true},
		{"BenchmarkA-b-2 1 3 ns/op 4 x/y 5 z/w", measurement{"BenchmarkA-b", "ns/op", 3}, true},
		{"BenchmarkC-2 1 3 ns/op 4 ms/run-median 5 cpu-ns/call", measurement{"BenchmarkC", "cpu-ns/call", 5}, true},
		{"goos: linux", measurement{}, false},
		{"BenchmarkHostCallJS says hello", measurement{}, false},
		{"PASS", measurement{}, false},
	}
	for _, c := range cases {
		m, ok, err := parseLine(c.line, prefer)
		require.NoError(t, err, c.line)
		assert.Equal(t, c.isRes, ok, c.line)
		assert.Equal(t, c.want, m, c.line)
	}
}

func TestParseLineErrors(t *testing.T) {
	for line, why := range map[string]string{
		"BenchmarkX-2 10 abc ns/op":     `"abc" is not a number`,
		"BenchmarkX-2 10 5 ns/op 3":     "a value without its unit",
		"BenchmarkX-2 10 5 ns/op x/y z": `"x/y" is not a number`,
		"BenchmarkX-2 10 5 B/op":        "no ns/op",
	} {
		_, _, err := parseLine(line, prefer)
		require.Error(t, err, line)
		assert.Contains(t, err.Error(), why, line)
	}
}

func TestParseOutput(t *testing.T) {
	out := "goos: linux\nBenchmarkA-2 10 100 ns/op\nsome log\nBenchmarkB/c-2 10 200 ns/op 1.5 ms/run-median\nPASS\n"
	ms, err := parseOutput(out, prefer)
	require.NoError(t, err)
	assert.Equal(t, []measurement{{"BenchmarkA", "ns/op", 100}, {"BenchmarkB/c", "ms/run-median", 1.5}}, ms)
}

// FuzzParseLine: a line is a result, not one, or an error; a result names a benchmark and a
// unit that the line holds.
func FuzzParseLine(f *testing.F) {
	f.Add("BenchmarkJSRun/fresh-2 2000 492288 ns/op 0.3210 ms/run-median")
	f.Add("BenchmarkX-16 100 12.5 ns/op 8 B/op 1 allocs/op")
	f.Add("Benchmark 1 NaN ns/op")
	f.Fuzz(func(t *testing.T, line string) {
		m, ok, err := parseLine(line, prefer)
		if err != nil || !ok {
			assert.Equal(t, measurement{}, m)
			return
		}
		assert.True(t, strings.HasPrefix(m.name, "Benchmark"))
		assert.Contains(t, line, m.name)
		assert.Contains(t, strings.Fields(line), m.unit)
	})
}
