package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/host"
)

// result turns a run into the tool's answer: structured content always; one text content with
// the output as JSON, or, for a failed run, isError with the reason (a JS stack included) and
// the log's tail.
func (s *Server) result(res host.Result) (*mcp.CallToolResult, *Result, error) {
	a := res.Audit
	out := &Result{
		Output: OutputJSON(res.Output),
		Status: a.Status,
		RunID:  a.RunID,
		Calls: Calls{Forwarded: a.Forwarded, Shed: a.Shed, Denied: a.Denied, OverBudget: a.OverBudget,
			Invalid: a.Invalid, Failed: a.Failed},
		Log: tail(string(res.Log), s.opts.MaxLog),
	}
	if res.Err == nil {
		content := []mcp.Content{&mcp.TextContent{Text: cut(string(out.Output), s.opts.MaxText)}}
		// Clients that forward only content to the model would lose console.log without this.
		if l := tail(strings.TrimRight(string(res.Log), "\n"), s.opts.MaxLog/2); l != "" {
			content = append(content, &mcp.TextContent{Text: "log tail:\n" + l + "\n"})
		}
		return &mcp.CallToolResult{Content: content}, out, nil
	}
	var b strings.Builder
	if a.RunID == "" { // refused before it started: there is no run
		fmt.Fprintf(&b, "refused: %s\n", a.Error)
	} else {
		fmt.Fprintf(&b, "run %s %s: %s\n", a.RunID, a.Status, a.Error)
	}
	log := strings.TrimRight(string(res.Log), "\n")
	// A thrown error's reason is the log's last lines (host.ToolError): say it once.
	if reason := strings.TrimPrefix(a.Error, "tool failed: "); reason != "" {
		log = strings.TrimRight(strings.TrimSuffix(log, reason), "\n")
	}
	if l := tail(log, s.opts.MaxLog/2); l != "" {
		b.WriteString("log tail:\n" + l + "\n")
	}
	if len(bytes.TrimSpace(res.Output)) > 0 {
		b.WriteString("output: " + cut(string(out.Output), s.opts.MaxText/2) + "\n")
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

// OutputJSON is the tool's value: its output when that is JSON, else the output as a string;
// null for none. It is the daemon's one: POST /v1/runs answers with it too. Invalid UTF-8 in a
// string output becomes U+FFFD.
func OutputJSON(out []byte) json.RawMessage {
	t := bytes.TrimSpace(out)
	if len(t) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(t) {
		return t
	}
	b, _ := json.Marshal(strings.ToValidUTF8(string(out), "\uFFFD"))
	return b
}

// cut keeps the first max bytes of s (at a rune boundary) and says what was left out.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[truncated: %d of %d bytes shown; structuredContent.output has it all]", n, len(s))
}

// tail keeps the last max bytes of s (at a rune boundary), saying how much was dropped.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := len(s) - max
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return fmt.Sprintf("[%d bytes cut]\n", i) + s[i:]
}
