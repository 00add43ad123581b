//go:build wasip1

// Command driver is the conformance driver for the Go guest preamble (preamble/go): a wasip1
// reactor whose run reads a scenario's operations on stdin, performs them through the preamble
// only (package ops, shared with the Extism driver), and prints its observations as JSON. The
// contract is in preamble/README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/plimsoll/plimsoll/conformance/drivers/internal/ops"
)

func main() {}

//go:wasmexport run
func run() int32 {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail("reading stdin: " + err.Error())
	}
	out, err := ops.Perform(data)
	if err != nil {
		return fail(err.Error())
	}
	os.Stdout.Write(out)
	return 0
}

func fail(msg string) int32 {
	fmt.Fprintln(os.Stderr, "driver:", msg)
	return 1
}
