package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/auditlog"
	"github.com/plimsoll/plimsoll/profiles"
)

type runFlags struct {
	profile, profiles, input, trace, audit string
	timeline                               string // .svg or .html
	kind, function                         string
	timeout                                time.Duration
}

func cmdRun(ctx context.Context, args []string, e env) int {
	var f runFlags
	fs := newFlags("run", "plimsoll-run run --profile NAME [--profiles DIR] [--input JSON|@FILE] [--trace FILE] [--timeline FILE.svg|.html] [--audit FILE] [--timeout DUR] [--kind KIND] [--function NAME] TOOL", e)
	fs.StringVar(&f.profile, "profile", "", "grant profile `NAME` (required)")
	fs.StringVar(&f.profiles, "profiles", "", "profile `DIR` (default $PLIMSOLL_PROFILES, else ./profiles)")
	fs.StringVar(&f.input, "input", "", "tool input: `JSON`, or @FILE to read it from a file")
	fs.StringVar(&f.trace, "trace", "", "write the call trace as JSON lines to `FILE`")
	fs.StringVar(&f.timeline, "timeline", "", "draw the run's chart to `FILE` (.svg or .html)")
	fs.StringVar(&f.audit, "audit", "", "write the audit line to `FILE` instead of stderr")
	fs.DurationVar(&f.timeout, "timeout", 0, "end the run after `DUR`, if sooner than the profile's run_timeout")
	fs.StringVar(&f.kind, "kind", "", "run TOOL as this `KIND`: "+strings.Join(kindNames(), ", ")+" (default: from the file's extension and imports)")
	fs.StringVar(&f.function, "function", "", "the Extism plugin's export `NAME` to call (default run)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 || f.profile == "" {
		fmt.Fprintf(e.stderr, "plimsoll-run run: need --profile NAME and exactly one TOOL (a %s file, or - for JS on stdin)\n", strings.Join(kindExtensions(), ", "))
		fs.Usage()
		return exitConfig
	}
	toolArg := fs.Arg(0)
	// Every run writes exactly one audit line, so refusals before the sandbox starts write one too.
	refuse := func(err error) int {
		fmt.Fprintf(e.stderr, "plimsoll-run: %v\n", err)
		writeAudit(f.audit, broker.NewAudit("", f.profile, toolName(toolArg), broker.StatusError, err), e)
		return exitConfig
	}
	profile, err := profiles.Load(profilesDir(f.profiles, e), f.profile)
	if err != nil {
		return refuse(err)
	}
	tool, err := readToolAs(toolArg, e.stdin, f.kind, f.function)
	if err != nil {
		return refuse(err)
	}
	input, err := readInput(f.input)
	if err != nil {
		return refuse(err)
	}
	if f.timeline != "" {
		if _, err := timelineWriter(f.timeline); err != nil {
			return refuse(err)
		}
	}
	if f.timeout < 0 {
		return refuse(fmt.Errorf("--timeout %s must be positive", f.timeout))
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	rt, err := host.New(ctx, host.Options{Getenv: e.getenv})
	if err != nil {
		return refuse(err)
	}
	defer rt.Close(context.Background())
	return report(runShowing(ctx, rt, tool, profile, input, e), f, e)
}

// report writes the output, log, trace and audit line, and picks the exit code.
func report(res host.Result, f runFlags, e env) int {
	e.stdout.Write(res.Output)
	if len(res.Output) > 0 && res.Output[len(res.Output)-1] != '\n' {
		fmt.Fprintln(e.stdout)
	}
	log := logWithoutReason(res.Log, res.Err)
	e.stderr.Write(log)
	if len(log) > 0 && log[len(log)-1] != '\n' {
		// The guest's last line is cut here, so nothing it wrote can run into the lines below.
		fmt.Fprintln(e.stderr)
	}
	code := exitOK
	if res.Err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run: %s\n", runError(res.Err, f.timeout))
		code = exitTool
		if errors.Is(res.Err, profiles.ErrNoSecret) {
			code = exitConfig
		}
	}
	if f.trace != "" {
		if err := writeTraceFile(f.trace, res.Trace); err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run: trace: %v\n", err)
			code = max(code, exitTool)
		}
	}
	if f.timeline != "" {
		if err := writeTimelineFile(f.timeline, res); err != nil {
			fmt.Fprintf(e.stderr, "plimsoll-run: timeline: %v\n", err)
			code = max(code, exitTool)
		}
	}
	writeAudit(f.audit, res.Audit, e)
	return code
}

func writeTraceFile(path string, trace []broker.TraceEntry) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := broker.WriteTrace(fh, trace); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// writeAudit appends the audit line to path, or writes it to stderr when path is empty. On
// stderr it is the last line written: report writes everything else first.
func writeAudit(path string, a broker.Audit, e env) {
	if path == "" {
		e.stderr.Write(a.Line())
		return
	}
	f, err := auditlog.Open(path)
	if err == nil {
		err = errors.Join(f.Append(a.Line()), f.Close())
	}
	if err != nil {
		// The line must not be lost: fall back to stderr and say why.
		fmt.Fprintf(e.stderr, "plimsoll-run: audit file: %v; audit line follows\n", err)
		e.stderr.Write(a.Line())
	}
}

// readTool reads TOOL: a file of a kind's extension (host.KindFor), or JS on stdin for "-".
func readTool(arg string, stdin io.Reader) (host.Tool, error) {
	r := stdin
	if arg != "-" {
		fh, err := os.Open(arg)
		if err != nil {
			return host.Tool{}, fmt.Errorf("tool %s: %w", arg, errors.Unwrap(err))
		}
		defer fh.Close()
		r = fh
	}
	tool, err := host.ReadTool(toolName(arg), r)
	if errors.Is(err, host.ErrToolKind) {
		return host.Tool{}, fmt.Errorf("%w, or - for JS on stdin (--kind %s for another name)", &host.ReadToolError{Name: arg, Err: host.ErrToolKind}, strings.Join(kindNames(), "|"))
	}
	return tool, err
}

// readToolAs reads TOOL as readTool does, or as the kind --kind names, and calls function in it
// when one is named (an Extism plugin's export).
func readToolAs(arg string, stdin io.Reader, kind, function string) (host.Tool, error) {
	if kind == "" {
		tool, err := readTool(arg, stdin)
		if err == nil && function != "" && tool.Kind() != host.KindExtism {
			return host.Tool{}, fmt.Errorf("--function %s: tool %s is not an Extism plugin (use --kind extism)", function, arg)
		}
		return tool.WithFunction(function), err
	}
	k, ok := host.KindFor(kind)
	if !ok || k.Name() != kind {
		return host.Tool{}, fmt.Errorf("--kind %q: want %s (or leave it out)", kind, strings.Join(kindNames(), ", "))
	}
	if function != "" && kind != host.KindExtism {
		return host.Tool{}, fmt.Errorf("--function %s: tool %s is not an Extism plugin (use --kind extism)", function, arg)
	}
	tool, err := readKind(arg, stdin, k)
	return tool.WithFunction(function), err
}

// readKind reads TOOL (stdin for "-") as a tool of kind k. Source may have any name; a module
// must have its kind's extension, so that a source file is not taken for one.
func readKind(arg string, stdin io.Reader, k host.Kind) (host.Tool, error) {
	exts := k.Extensions()
	if k.Language() == "" && !slices.Contains(exts, filepath.Ext(arg)) {
		return host.Tool{}, fmt.Errorf("--kind %s: tool %s: want a %s file", k.Name(), arg, strings.Join(exts, " or "))
	}
	r, name := stdin, "stdin"+exts[0]
	if arg != "-" {
		fh, err := os.Open(arg)
		if err != nil {
			return host.Tool{}, fmt.Errorf("tool %s: %w", arg, errors.Unwrap(err))
		}
		defer fh.Close()
		r, name = fh, filepath.Base(arg)
	}
	src, err := io.ReadAll(io.LimitReader(r, host.MaxToolBytes+1))
	if err != nil {
		return host.Tool{}, fmt.Errorf("tool %s: %w", arg, err)
	}
	if len(src) > host.MaxToolBytes {
		return host.Tool{}, fmt.Errorf("tool %s is over %d bytes", arg, host.MaxToolBytes)
	}
	return k.Tool(name, src), nil
}

// kindExtensions are the file extensions TOOL may have, each once.
func kindExtensions() []string {
	var exts []string
	for _, k := range host.Kinds() {
		for _, x := range k.Extensions() {
			if !slices.Contains(exts, x) {
				exts = append(exts, x)
			}
		}
	}
	return exts
}

// kindNames are --kind's values: every kind the host runs.
func kindNames() []string {
	var names []string
	for _, k := range host.Kinds() {
		names = append(names, k.Name())
	}
	return names
}

func toolName(arg string) string {
	if arg == "-" {
		return "stdin.js"
	}
	return filepath.Base(arg)
}

func readCappedFile(path string, max int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, max+1))
}

// readInput takes --input as JSON text or @FILE, and checks it is JSON. No input is null.
func readInput(v string) ([]byte, error) {
	if v == "" {
		return []byte("null"), nil
	}
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := readCappedFile(name, host.MaxToolBytes)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", v, err)
		}
		data = b
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("--input is not valid JSON: %w", jsonPosition(data))
	}
	return data, nil
}
