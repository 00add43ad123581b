package broker

import (
	"bufio"
	"encoding/json"
	"io"
)

// Line renders the audit as exactly one JSON line, newline-terminated. JSON escaping keeps CR, LF
// and ANSI escapes in guest-supplied text from breaking or forging lines.
func (a Audit) Line() []byte {
	b, err := json.Marshal(a)
	if err != nil {
		// Unreachable: Audit holds only strings and numbers.
		b = []byte(`{"status":"error","error":"audit encoding failed"}`)
	}
	return append(b, '\n')
}

// WriteTrace writes entries as JSON lines, in call order.
func WriteTrace(w io.Writer, entries []TraceEntry) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}
