package mcpserver

import "fmt"

// MetaCriticality is the _meta key of a tools/call that sets the run's criticality: "critical",
// "normal" or "sheddable" (issue 26). Over HTTP it takes the place of the Plimsoll-Criticality
// header.
const MetaCriticality = "plimsoll/criticality"

// metaCriticality reads the key; a value that is not a string is kept as text, so the parser
// refuses it by name instead of it being dropped.
func metaCriticality(meta map[string]any) string {
	switch v := meta[MetaCriticality].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
