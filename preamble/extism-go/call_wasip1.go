//go:build wasip1 && plimsoll_extism

package plimsoll

import (
	"github.com/extism/go-pdk"

	"github.com/plimsoll/plimsoll/abi"
	goplimsoll "github.com/plimsoll/plimsoll/preamble/go"
)

// plimsollCall sends the request envelope in one Extism memory block and returns the block
// holding the response envelope; 0 means no envelope (called outside a run).
//
//go:wasmimport extism:host/user plimsoll_call
func plimsollCall(request uint64) uint64

func init() { goplimsoll.UseTransport(exchange) }

// exchange is one round trip through plimsoll_call. Both blocks are freed before it returns.
func exchange(req []byte) ([]byte, error) {
	in := pdk.AllocateBytes(req)
	out := plimsollCall(in.Offset())
	in.Free()
	if out == 0 {
		return nil, &HostError{Func: CallFunc, Code: abi.ErrNoRun}
	}
	resp := pdk.FindMemory(out)
	defer resp.Free()
	return resp.ReadBytes(), nil
}
