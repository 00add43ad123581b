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
	isTTY  bool // stdout is a terminal: the demo's chart in colour
	// stderrTTY: stderr is a terminal, so a long run shows a live status line there.
	stderrTTY bool
}

const usage = `plimsoll-run: run agent-written tools in a sandbox, through the broker.

Usage:
  plimsoll-run run --profile NAME [--profiles DIR] [--input JSON|@FILE] [--trace FILE]
                   [--audit FILE] [--timeout DUR] [--kind KIND] [--function NAME]
                   [--timeline FILE.svg|.html] TOOL
                   TOOL: .js, .py, .wasm (a wasip1 tool or an Extism plugin), or - for JS on stdin;
                   KIND: js, python, wasm, extism (default: from the extension and imports)
  plimsoll-run demo [--status 503|429] [--retry-after SECONDS|none] [--no-health]
                    [--tool FILE [--input JSON|@FILE]] [--timeline FILE.svg|.html] [--trace FILE]
  plimsoll-run demo --runs N [--seconds S]       many runs against one API: the API limit
  plimsoll-run profiles check [--profiles DIR]
  plimsoll-run conformance [--lang js|go|extism-go|python | --guest DRIVER.wasm|.js|.py] [--scenarios DIR] [--json]
                           [--run REGEXP] [--parallel N]
  plimsoll-run serve [--listen ADDR] [--admin ADDR|off] [--admin-token-env NAME] [--profiles DIR]
                     [--clients FILE] [--audit FILE] [--max-runs N] [--queue N] [--drain DUR]
                     [--fleet URL [--fleet-name NAME] [--replica NAME] [--fleet-creds FILE]
                     [--fleet-token-env NAME] [--fleet-ca FILE] [--fleet-cert FILE] [--fleet-key FILE] [--fleet-replicas N]]
                     the daemon: /v1, and MCP over streamable HTTP at /mcp
  plimsoll-run admin state|force-open NAME --reason R|clear NAME|reload [--profile NAME]
                     [--route "METHOD /path"] [--admin ADDR] [--token-env NAME] [--operator NAME] [--json]
  plimsoll-run admin limits [--profile NAME] | retune NAME [--limit gradient2|aimd|N] [--min N]
                     [--max N] [--max-queue N] [--queue-timeout D] [--admin ADDR] [--token-env NAME] [--json]
  plimsoll-run admin approvals|approve ID [--hash H]|decline ID [--reason R] [--admin ADDR]
  plimsoll-run mcp --profile NAME [--profile NAME ...] [--profiles DIR] [--audit FILE]
                   serves MCP on stdio: one tool, run_NAME, per profile
  plimsoll-run example-api [--listen 127.0.0.1:8080] [--overload]
                   the demo's pet store and inventory API, for the profiles in examples/profiles

Each command takes --help. Exit codes: 0 ok; 1 the tool failed (threw, timed out or hit a
limit); 2 usage, config or profile error.

Environment:
  PLIMSOLL_PROFILES   default profile directory (else ./profiles)
  PLIMSOLL_CACHE_DIR  wazero compilation cache (else the user cache dir)
  PLIMSOLL_LISTEN     serve's API address (else 127.0.0.1:7070)
  PLIMSOLL_ADMIN      the admin plane's address, for serve and admin (else 127.0.0.1:7071)
  PLIMSOLL_ADMIN_TOKEN  the admin token plimsoll-run admin sends (--token-env names another)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // the first signal starts a clean stop; a second one ends the process at once
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, isTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr)}
	code := cli(ctx, os.Args[1:], e)
	stop()
	os.Exit(code)
}

func cli(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitConfig
	}
	if asksForHelp(args[1:]) {
		e.stderr = e.stdout // help asked for is the answer, not an error
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
	case "example-api":
		return cmdExampleAPI(ctx, args[1:], e)
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

// asksForHelp reports whether a command's arguments ask for its help before any "--".
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
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

// envOr is the environment variable name's value, or def when it is unset or empty.
func envOr(e env, name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
