//go:build !wasip1

package plimsoll

import "github.com/plimsoll/plimsoll/abi"

// roundTrip is the transport Do uses. Outside a plimsoll guest there is no host; tests replace it.
var roundTrip = func([]byte) ([]byte, error) { return nil, ErrNoHost }

// calls is the dispatcher Go and Wait use. Outside a plimsoll guest every call fails with
// ErrNoHost; tests replace its imports.
var calls = &dispatcher{imports: noHost{}}

type noHost struct{}

func (noHost) submit([]byte) int32         { return abi.ErrNoRun }
func (noHost) wait([]uint32, uint32) int32 { return abi.ErrNoRun }
func (noHost) result(int32, []byte) int32  { return abi.ErrNoRun }
