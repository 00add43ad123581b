package js

import (
	"regexp"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/abi"
)

// The preamble is JavaScript, compiled into the engine as it is, so the two ABI names it needs
// are written in it: the outcome header (lower-cased, as Response.headers keys are) and the
// outcome of a forwarded call. This test holds them to abi's, so they cannot drift.
func TestPreambleUsesTheABINames(t *testing.T) {
	want := `this.headers["` + strings.ToLower(abi.OutcomeHeader) + `"] || "` + abi.Forwarded + `"`
	if !strings.Contains(Source, want) {
		t.Fatalf("preamble.js no longer reads the outcome as %s", want)
	}
	// No other outcome name or ABI code is written in the preamble.
	for _, o := range abi.Outcomes[1:] {
		if regexp.MustCompile(`["']` + o + `["']`).MatchString(Source) {
			t.Errorf("preamble.js writes the outcome %q: read it from the outcome header instead", o)
		}
	}
}
