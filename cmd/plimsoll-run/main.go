// Command plimsoll-run runs an agent-written tool in plimsoll's sandbox, shows the overload demo,
// and checks grant profiles.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes: 0 ok; 1 the tool failed (threw, timed out or hit a limit); 2 usage, config or
// profile error.
const (
	exitOK     = 0
	exitTool   = 1
	exitConfig = 2
)

// env is what a command may see of its process, so tests can run commands in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	isTTY  bool
}

const usage = `plimsoll-run: run agent-written tools in a sandbox, through the broker.

Usage:
  plimsoll-run run --profile NAME [--profiles DIR] [--input JSON|@FILE] [--trace FILE]
                   [--audit FILE] [--timeout DUR] TOOL      TOOL: .js, .wasm, or - for JS on stdin
  plimsoll-run demo [--status 503|429] [--retry-after SECONDS|none] [--no-health] [--tool FILE]
  plimsoll-run profiles check [--profiles DIR]
  plimsoll-run conformance [--lang js|go | --guest DRIVER.wasm] [--scenarios DIR] [--json]
  plimsoll-run serve [--listen ADDR] [--admin ADDR] [--profiles DIR] [--clients FILE]
                     [--audit FILE] [--max-runs N] [--queue N] [--drain DUR]
  plimsoll-run admin state|force-open NAME --reason R|clear NAME|reload [--admin ADDR] [--json]
                     (also serves MCP over streamable HTTP at /mcp)
  plimsoll-run admin approvals|approve ID [--hash H]|decline ID [--reason R] [--admin ADDR]
  plimsoll-run mcp --profile NAME [--profile NAME ...] [--profiles DIR] [--audit FILE]
                   serves MCP on stdio: one tool, run_NAME, per profile

Each command takes --help. Exit codes: 0 ok; 1 the tool failed (threw, timed out or hit a
limit); 2 usage, config or profile error.

Environment:
  PLIMSOLL_PROFILES   default profile directory (else ./profiles)
  PLIMSOLL_CACHE_DIR  wazero compilation cache (else the user cache dir)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // the first signal starts a clean stop; a second one ends the process at once
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, isTTY: isTerminal(os.Stdout)}
	code := cli(ctx, os.Args[1:], e)
	stop()
	os.Exit(code)
}

func cli(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitConfig
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], e)
	case "demo":
		return cmdDemo(ctx, args[1:], e)
	case "conformance":
		return cmdConformance(ctx, args[1:], e)
	case "serve":
		return cmdServe(ctx, args[1:], e)
	case "admin":
		return cmdAdmin(ctx, args[1:], e)
	case "mcp":
		return cmdMCP(ctx, args[1:], e)
	case "profiles":
		if len(args) > 1 && args[1] == "check" {
			return cmdProfilesCheck(args[2:], e)
		}
		fmt.Fprint(e.stderr, "usage: plimsoll-run profiles check [--profiles DIR]\n")
		return exitConfig
	case "-h", "--help", "help":
		fmt.Fprint(e.stdout, usage)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "plimsoll-run: unknown command %q\n\n%s", args[0], usage)
	return exitConfig
}

// newFlags makes a flag set whose errors and help go to stderr, with a usage line on top.
func newFlags(name, synopsis string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags returns an exit code when the command should stop: 0 for --help, 2 for bad flags.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK, false
	}
	if err != nil {
		return exitConfig, false
	}
	return 0, true
}

func profilesDir(flagValue string, e env) string {
	if flagValue != "" {
		return flagValue
	}
	if d := e.getenv("PLIMSOLL_PROFILES"); d != "" {
		return d
	}
	return "profiles"
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
