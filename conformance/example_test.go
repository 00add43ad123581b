package conformance_test

import (
	"os"

	"github.com/plimsoll/plimsoll/conformance"
)

// The table has one row per scenario; a failed one shows its first difference, expected vs
// observed. This is the report of the deliberately broken driver that drops query arrays.
func ExampleWriteTable() {
	conformance.WriteTable(os.Stdout, conformance.Report{
		Driver: "drops-query-arrays.js", Passed: 2, Failed: 1, DurationMs: 1234,
		Results: []conformance.Result{
			{Scenario: "forwarded-json", Pass: true},
			{Scenario: "query-arrays", Differences: []string{
				`received[0] (GET /items): query tag: expected ["red", "blue", "green"], observed ["red"] (raw query "tag=red&limit=5")`}},
			{Scenario: "query-raw", Pass: true},
		},
	})
	// Output:
	// SCENARIO        RESULT  FIRST DIFFERENCE (expected vs observed)
	// forwarded-json  pass
	// query-arrays    FAIL    received[0] (GET /items): query tag: expected ["red", "blue", "green"], observed ["red"] (raw query "tag=red&limit=5")
	// query-raw       pass
	// driver drops-query-arrays.js: 3 scenarios, 2 passed, 1 failed (1.2s)
}
