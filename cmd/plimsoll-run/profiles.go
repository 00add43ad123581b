package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/profiles"
)

func cmdProfilesCheck(args []string, e env) int {
	fs := newFlags("profiles check", "plimsoll-run profiles check [--profiles DIR]", e)
	dirFlag := fs.String("profiles", "", "profile `DIR` (default $PLIMSOLL_PROFILES, else ./profiles)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	dir := profilesDir(*dirFlag, e)
	fmt.Fprintf(e.stdout, "profiles in %s:\n", absPath(dir))
	good, err := profiles.LoadDir(dir)
	for _, p := range good {
		fmt.Fprintf(e.stdout, "ok    %s (%s): %s\n", p.Name, p.File, summary(p))
	}
	if err != nil {
		for _, one := range splitJoined(err) {
			fmt.Fprintf(e.stdout, "FAIL  %v\n", one)
		}
		return exitConfig
	}
	if len(good) == 0 {
		fmt.Fprintf(e.stderr, "plimsoll-run: no profiles (.yaml, .yml, .toml, .json) in %s\n", absPath(dir))
		return exitConfig
	}
	return exitOK
}

// absPath names dir as the user can find it, whatever the working directory was.
func absPath(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func summary(p *profiles.Profile) string {
	parts := []string{fmt.Sprintf("%d routes", len(p.Routes))}
	if p.HealthCheck != nil {
		parts = append(parts, "health_check "+p.HealthCheck.String())
	} else {
		parts = append(parts, "no health_check")
	}
	parts = append(parts, fmt.Sprintf("budget %d calls", p.Budget.Calls))
	if p.Preamble != "" {
		parts = append(parts, "preamble "+p.Preamble)
	}
	if p.PreamblePython != "" {
		parts = append(parts, "preamble_python "+p.PreamblePython)
	}
	if p.Concurrency != nil {
		parts = append(parts, "concurrency "+p.Concurrency.String())
	}
	return strings.Join(parts, ", ")
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
