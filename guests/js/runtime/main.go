//go:build wasip1

// Command runtime is plimsoll's JavaScript guest: the goja interpreter built as a wasip1 reactor
// (guest ABI v1, preamble/ABI.md).
//
// Instantiating the module runs _initialize, which is Go's package initialisation: it creates
// the goja runtime and evaluates the generic preamble, so a pool of pre-initialised instances
// pays for that once. The exported run function then runs one tool:
//
//   - stdin: {"tool": "<JS source>", "input": <JSON>, "preamble": "<extra JS>", "name": "<name>"}
//   - stdout: JSON.stringify of the tool's resolved value (undefined becomes null), and nothing
//     else;
//   - stderr: console output, then on failure the reason, last;
//   - result: 0 ok, 1 the tool failed, 2 a guest-side limit was hit (call-stack depth).
//
// An instance runs one tool. Running a second tool on the same instance works but shares the
// global object with the first, so the host never does that.
package main

import (
	"os"
)

func main() {}

// Exit codes of run.
const (
	exitOK      int32 = 0
	exitFailed  int32 = 1
	exitLimited int32 = 2
)

// state is the instance's JavaScript runtime, built by init. setupErr is kept for run to report:
// failing in _initialize would trap with no readable reason.
var (
	state    *engine
	setupErr error
)

func init() {
	state, setupErr = newEngine()
	if setupErr == nil {
		state.warmUp()
	}
}

//go:wasmexport run
func run() int32 {
	if setupErr != nil {
		writeString(os.Stderr, "plimsoll: the JavaScript runtime failed to start: "+setupErr.Error()+"\n")
		return exitFailed
	}
	return state.run(os.Stdin, os.Stdout, os.Stderr)
}
