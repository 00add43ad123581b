package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// rounds holds, per benchmark, the values measured for the base and for the change, one pair per
// round (a round runs both binaries back to back).
type rounds map[string]*pairs

type pairs struct {
	unit       string
	base, head []float64
	mismatch   string // the other unit, when the sides report different metrics
}

func (r rounds) add(side string, ms []measurement) {
	for _, m := range ms {
		p := r[m.name]
		if p == nil {
			p = &pairs{unit: m.unit}
			r[m.name] = p
		}
		if m.unit != p.unit {
			p.mismatch = m.unit
			continue
		}
		if side == "base" {
			p.base = append(p.base, m.value)
		} else {
			p.head = append(p.head, m.value)
		}
	}
}

// verdict is one benchmark's outcome: the median over rounds of head/base in the same round.
type verdict struct {
	name   string
	unit   string
	ratio  float64 // 0 when there is no pair to compare
	ratios []float64
	note   string
}

// judge compares every benchmark measured on both sides. A benchmark only one side has is
// reported, not judged (added or removed by the change).
func (r rounds) judge() []verdict {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	var vs []verdict
	for _, n := range names {
		p := r[n]
		v := verdict{name: n, unit: p.unit}
		switch {
		case p.mismatch != "":
			v.note = fmt.Sprintf("not judged: the sides report different metrics (%s, %s)", p.unit, p.mismatch)
		case len(p.base) == 0:
			v.note = "new: no baseline"
		case len(p.head) == 0:
			v.note = "removed by the change"
		default:
			for i := range min(len(p.base), len(p.head)) {
				if p.base[i] > 0 {
					v.ratios = append(v.ratios, p.head[i]/p.base[i])
				}
			}
			v.ratio = median(v.ratios)
		}
		vs = append(vs, v)
	}
	return vs
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// report writes one line per benchmark and returns those whose median ratio exceeds max.
func report(vs []verdict, max float64) (text string, regressed []string) {
	var b strings.Builder
	for _, v := range vs {
		if v.note != "" {
			fmt.Fprintf(&b, "%-40s %s\n", v.name, v.note)
			continue
		}
		mark := "ok"
		if v.ratio > max {
			mark = fmt.Sprintf("REGRESSED (over %.2f×)", max)
			regressed = append(regressed, v.name)
		}
		fmt.Fprintf(&b, "%-40s %s head/base median %.2f× of rounds %s  %s\n", v.name, v.unit, v.ratio, fmtRatios(v.ratios), mark)
	}
	return b.String(), regressed
}

func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
