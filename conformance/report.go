package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteTable writes one row per scenario: its name, pass or FAIL, and on failure the first
// difference, expected against observed. A summary line follows.
func WriteTable(w io.Writer, rep Report) error {
	width := len("SCENARIO")
	for _, r := range rep.Results {
		width = max(width, len(r.label()))
	}
	var b strings.Builder
	row := func(name, result, diff string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-*s  %-6s  %s", width, name, result, diff), " "))
		b.WriteByte('\n')
	}
	row("SCENARIO", "RESULT", "FIRST DIFFERENCE (expected vs observed)")
	for _, r := range rep.Results {
		name := r.label()
		switch {
		case r.Skipped != "":
			row(name, "skip", r.Skipped)
			continue
		case r.Pass:
			row(name, "pass", "")
			continue
		}
		first := "(no difference recorded)"
		if len(r.Differences) > 0 {
			first = r.Differences[0]
			if more := len(r.Differences) - 1; more > 0 {
				first += fmt.Sprintf(" (+%d more)", more)
			}
		}
		row(name, "FAIL", first)
	}
	fmt.Fprintf(&b, "driver %s: %d scenarios, %d passed, %d failed", rep.Driver, len(rep.Results), rep.Passed, rep.Failed)
	if rep.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped", rep.Skipped)
	}
	fmt.Fprintf(&b, " (%.1fs)\n", float64(rep.DurationMs)/1000)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the reports as one JSON document, {"ok": bool, "drivers": [report...]}, with
// every difference of every failed scenario.
func WriteJSON(w io.Writer, reps []Report) error {
	ok := len(reps) > 0
	for _, r := range reps {
		ok = ok && r.OK()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		OK      bool     `json:"ok"`
		Drivers []Report `json:"drivers"`
	}{ok, reps})
}

// label is the scenario's name, with the ABI version it needs when that is past 1.
func (r Result) label() string {
	if r.ABI > 1 {
		return fmt.Sprintf("%s (v%d)", r.Scenario, r.ABI)
	}
	return r.Scenario
}
