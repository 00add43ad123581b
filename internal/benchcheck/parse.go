package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// measurement is one benchmark result line: its name (without the -GOMAXPROCS suffix) and the
// value of the metric compared.
type measurement struct {
	name  string
	unit  string
	value float64
}

// parseLine reads a line of `go test -bench` output. ok is false for lines that are not results.
// The metric is the first of prefer that the line reports, else ns/op.
func parseLine(line string, prefer []string) (m measurement, ok bool, err error) {
	fields := strings.Fields(line)
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
		return measurement{}, false, nil
	}
	if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
		return measurement{}, false, nil // a log line that starts with a benchmark's name
	}
	if len(fields)%2 != 0 {
		return measurement{}, false, fmt.Errorf("benchmark line %q: a value without its unit", line)
	}
	m.name = trimProcs(fields[0])
	rank := len(prefer) + 1 // ns/op's; 0..len(prefer)-1 for the preferred units
	for i := 2; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return measurement{}, false, fmt.Errorf("benchmark line %q: %q is not a number", line, fields[i])
		}
		unit := fields[i+1]
		r := slices.Index(prefer, unit)
		if unit == "ns/op" {
			r = len(prefer)
		}
		if r >= 0 && r < rank {
			m.unit, m.value, rank = unit, v, r
		}
	}
	if m.unit == "" {
		return measurement{}, false, fmt.Errorf("benchmark line %q: no ns/op", line)
	}
	return m, true, nil
}

// trimProcs drops the "-N" suffix go test adds for GOMAXPROCS.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// parseOutput reads every result line of one benchmark binary's output.
func parseOutput(out string, prefer []string) ([]measurement, error) {
	var ms []measurement
	for _, line := range strings.Split(out, "\n") {
		m, ok, err := parseLine(line, prefer)
		if err != nil {
			return nil, err
		}
		if ok {
			ms = append(ms, m)
		}
	}
	return ms, nil
}
