// Package mcpserver serves plimsoll's grant profiles as Model Context Protocol tools: one
// code-mode tool per profile, run_<profile>, whose input is JavaScript (the body of an async
// function) and whose every outbound call goes through the broker under that profile.
//
// It is built on the official SDK (github.com/modelcontextprotocol/go-sdk): one *mcp.Server per
// process, with typed handlers (mcp.AddTool), served over stdio by plimsoll-run mcp and over
// streamable HTTP at /mcp by plimsoll-run serve. Who runs the tool — admission, the crash
// journal, the audit file — is the Backend's business; this package decides what a tool looks
// like, who may see it, and how a run becomes a tool result. A run that fails (the tool threw,
// timed out or hit a limit, or the daemon shed it) is an isError result, never a protocol error.
package mcpserver
