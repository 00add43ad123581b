package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/auditlog"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server/mcpserver"
)

const mcpSynopsis = "plimsoll-run mcp --profiles DIR --profile NAME [--profile NAME ...] [--audit FILE]"

// names is a repeatable string flag.
type names []string

func (n *names) String() string { return strings.Join(*n, ",") }
func (n *names) Set(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	*n = append(*n, v)
	return nil
}

// cmdMCP serves the chosen profiles as MCP tools on stdio until the client closes stdin or
// SIGTERM/SIGINT (ctx). stdout is the protocol only; logs and, without --audit, audit lines go
// to stderr.
func cmdMCP(ctx context.Context, args []string, e env) int {
	var served names
	fs := newFlags("mcp", mcpSynopsis, e)
	dir := fs.String("profiles", "", "profile `DIR` (default $PLIMSOLL_PROFILES, else ./profiles)")
	fs.Var(&served, "profile", "serve grant profile `NAME` as the tool run_NAME (repeat for more; at least one)")
	auditPath := fs.String("audit", "", "append every tool call's audit line to `FILE`, synced (default stderr)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 || len(served) == 0 {
		fmt.Fprintln(e.stderr, "plimsoll-run mcp: need at least one --profile NAME and no arguments")
		fs.Usage()
		return exitConfig
	}
	stderr := &lockedWriter{w: e.stderr} // the logger and the audit lines share it
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	var list []*profiles.Profile
	seen := map[string]bool{}
	for _, name := range served {
		if seen[mcpserver.ToolName(name)] {
			fmt.Fprintf(e.stderr, "plimsoll-run mcp: --profile %s is given twice (or shares its tool name %s)\n", name, mcpserver.ToolName(name))
			return exitConfig
		}
		seen[mcpserver.ToolName(name)] = true
		p, err := profiles.Load(profilesDir(*dir, e), name)
		if err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run mcp: %v\n", err)
			return exitConfig
		}
		if _, err := mcpserver.APIText(p); err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run mcp: profile %s: %v\n", name, err)
			return exitConfig
		}
		list = append(list, p)
	}
	audit, err := openAuditSink(*auditPath, stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run mcp: --audit: %v\n", err)
		return exitConfig
	}
	defer audit.close()

	rt, err := host.New(ctx, host.Options{Getenv: e.getenv})
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run mcp: %v\n", err)
		return exitTool
	}
	defer rt.Close(context.Background())
	go func() { // a Python call then starts in milliseconds; a failure is reported by that call
		rt.PreparePython()
		for _, p := range list { // and no tool's first call pays for its profile's clients
			if err := rt.PreparePreambles(ctx, p); errors.Is(err, host.ErrClosed) || ctx.Err() != nil {
				return
			}
		}
	}()
	backend := &mcpserver.Local{Runtime: rt, Served: list, Audit: audit.write}
	srv := mcpserver.New(mcpserver.Options{Backend: backend, Logger: log})

	gate := newAnswerGate(ctx)
	t := &mcp.IOTransport{Reader: gate.reader(e.stdin), Writer: gate.writer(e.stdout)}
	tools := make([]string, len(list))
	for i, p := range list {
		tools[i] = mcpserver.ToolName(p.Name)
	}
	log.Info("serving MCP on stdio", "tools", tools)
	err = srv.Serve(ctx, t)
	backend.Wait() // runs still in flight when the client left are audited before exit
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		log.Error("MCP session ended", "error", err.Error())
		return exitTool
	}
	return exitOK
}

// lockedWriter serialises whole writes from the logger and the audit sink.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// auditSink appends audit lines to an audit file (auditlog's rule: synced before the call
// returns), or to stderr without one. A line the file refuses goes to stderr, with the reason:
// it is never lost.
type auditSink struct {
	f      *auditlog.File
	stderr io.Writer
}

func openAuditSink(path string, stderr io.Writer) (*auditSink, error) {
	if path == "" {
		return &auditSink{f: auditlog.Stream(stderr), stderr: stderr}, nil
	}
	f, err := auditlog.Open(path)
	if err != nil {
		return nil, err
	}
	return &auditSink{f: f, stderr: stderr}, nil
}

func (a *auditSink) write(line []byte) {
	if err := a.f.Append(line); err != nil {
		fmt.Fprintf(a.stderr, "plimsoll-run mcp: audit file: %v; audit line follows\n", err)
		a.stderr.Write(line)
	}
}

func (a *auditSink) close() { a.f.Close() }
