package broker

import (
	"encoding/json"

	"github.com/plimsoll/plimsoll/internal/clienttext"
)

// MaxAuditLine is the most bytes one audit line takes, newline included, from every front end:
// the client names on it are cut to 128 bytes and escaped, the error to 4 KiB (internal/
// clienttext), and the error gives way further if JSON escaping would still take the line past
// it. The other fields are the operator's or the broker's, and short.
const MaxAuditLine = 8 << 10

// bounded is the audit with its client- and guest-chosen text capped; Line applies it.
func (a Audit) bounded() Audit {
	a.Client = clienttext.Name(a.Client)
	a.MCPClient = clienttext.Name(a.MCPClient)
	a.Error = clienttext.Error(a.Error)
	// JSON escaping can grow text up to sixfold (<, > and & become \u003c).
	clienttext.Shrink(&a.Error, func() bool {
		b, err := json.Marshal(a)
		return err == nil && len(b) < MaxAuditLine
	})
	return a
}
