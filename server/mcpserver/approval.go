package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// elicitOnly is the approver of a process with no admin plane (plimsoll-run mcp on stdio): the
// client that started the run, or no one.
type elicitOnly struct{ ask Elicitor }

func (e elicitOnly) Approve(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	if e.ask != nil && slices.Contains(q.Channels, profiles.ChannelElicit) {
		if ans, ok := e.ask(ctx, q); ok {
			return ans
		}
	}
	return broker.ApprovalAnswer{Decision: broker.ApprovalUnavailable, Reason: "the MCP client cannot elicit, and this process has no admin plane"}
}

// Elicitor asks the person at an MCP client about one call; ok is false when that client cannot
// be asked (the next channel takes over).
type Elicitor func(ctx context.Context, q broker.ApprovalRequest) (ans broker.ApprovalAnswer, ok bool)

// ElicitApproval asks through an MCP form elicitation on the session that started the run. It is
// nil for a client that did not declare the elicitation capability: it is not asked. Accept
// grants, decline declines, cancel is a refusal too; the answer is attributed "mcp:" + client.
func ElicitApproval(ss *mcp.ServerSession, client string) Elicitor {
	if ss == nil || !canElicit(ss) {
		return nil
	}
	return func(ctx context.Context, q broker.ApprovalRequest) (broker.ApprovalAnswer, bool) {
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: ApprovalMessage(q), RequestedSchema: approvalSchema})
		if err != nil {
			if ctx.Err() != nil {
				return broker.ApprovalAnswer{Decision: broker.ApprovalTimeout, Channel: profiles.ChannelElicit}, true
			}
			return broker.ApprovalAnswer{}, false // the client could not be asked: try the next channel
		}
		ans := answerOf(res)
		ans.By = "mcp:" + client
		return ans, true
	}
}

func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // neither declared means form, as the spec's first version had it
}

const maxNote = 200 // the trace keeps at most this much of a person's note

// approvalSchema is the form: accepting it approves; the note is optional and stays in the trace.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"note": map[string]any{"type": "string", "title": "Note (optional)", "maxLength": maxNote},
	},
}

// ApprovalMessage is what the person at an MCP client reads: the exact call, and the hash that
// binds the answer to it. Every field is broker-made (SummarizeBody and HeaderLines escape what
// the tool wrote) or checked at the grant, so nothing in it can hide or reorder text.
func ApprovalMessage(q broker.ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tool %s (run %s, profile %s) wants to send:\n\n", q.Tool, q.RunID, q.Profile)
	target := q.Path
	if q.Query != "" {
		target += "?" + q.Query
	}
	fmt.Fprintf(&b, "%s %s\n(route %s, which needs a person's approval)\n\n", q.Method, target, q.Route)
	for _, h := range q.Headers {
		fmt.Fprintf(&b, "%s\n", h)
	}
	fmt.Fprintf(&b, "Body: %s\n\n", q.Summary)
	fmt.Fprintf(&b, "Call sha256: %s\nAccept to let this exact call leave; decline to refuse it.", q.Hash)
	return b.String()
}
