package host

import (
	"context"

	"github.com/plimsoll/plimsoll/profiles"
)

// kindID names a kind of guest; a Tool carries one.
type kindID int

const (
	kindNone   kindID = iota // a zero Tool
	kindJS                   // JavaScript source, run on the embedded engine
	kindWasm                 // a wasip1 module of the tool's own
	kindExtism               // an Extism plugin, run on go-sdk
	kindPython               // Python source, run on the embedded CPython (pythonkind.go)
)

// guestKind is what the host needs from one kind of guest: how its module is compiled and kept,
// what its stdin is, whether a ready instance is waiting, and how to read the way its run ended. Runtime holds one of each, built in New, and never asks which kind it has: a new kind is
// one file with its type, one kindID and one line in New.
type guestKind interface {
	// load returns the compiled guest for tool and the guest's stdin. ctx carries the run's
	// deadline. The caller calls guest.release, if set, when the run is done.
	load(ctx context.Context, tool Tool, p *profiles.Profile, limits profiles.Limits, input []byte) (*guest, []byte, error)
	// pooled returns a ready instance of g that fits under memLimit, or nil.
	pooled(g *guest, memLimit uint64) *instance
	// ended says how a run ended when the kind knows better than the host's general rules
	// (outcome.go), such as a limit the guest enforced itself; ok false leaves it to them.
	ended(st *runState, ret int32, callErr error) (err error, ok bool)
	// stop ends background work (a pool's filler) before the runtime closes.
	stop(ctx context.Context)
	// release frees what outlives runs (compiled modules, snapshots) once no run is left.
	release()
}

// caller is a guestKind that makes the guest call itself, on instances it creates (an Extism
// plugin runs inside go-sdk). It sets st.inst, so the run's outcome and clean-up are as for any.
type caller interface {
	call(st *runState, input []byte) (int32, error)
}
