//go:build wasip1

// Command driver is the conformance driver for Extism plugins written in Go (go-pdk) on
// preamble/extism-go: a plugin whose function run reads a scenario's operations as its input,
// performs them through the preamble only (plimsoll_call; package ops, shared with the Go guest
// driver), and outputs its observations as JSON. The contract is in preamble/README.md.
package main

import (
	"github.com/extism/go-pdk"

	"github.com/plimsoll/plimsoll/conformance/drivers/internal/ops"
	_ "github.com/plimsoll/plimsoll/preamble/extism-go" // carries the Go preamble over plimsoll_call
)

func main() {}

//go:wasmexport run
func run() int32 {
	out, err := ops.Perform(pdk.Input())
	if err != nil {
		pdk.SetErrorString("driver: " + err.Error())
		return 1
	}
	pdk.Output(out)
	return 0
}
