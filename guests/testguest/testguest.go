// Package testguest embeds the Go test guest (./guest), a wasip1 reactor that the host's tests and
// benchmarks drive with one JSON command on stdin: make host calls, pass bad pointers, spin, run
// out of memory, flood stdout or stderr, sleep. The command set is documented in ./guest.
//
// It also holds ImportsEnvFoo, a hand-assembled module that imports a function plimsoll does not
// provide.
package testguest

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../internal/wasmbuild testguest

//go:embed testguest.wasm.gz
var wasmGz []byte

var wasm = wasmgz.Lazy("guests/testguest/testguest.wasm.gz", wasmGz)

// Wasm returns the test guest module. Every call returns the same slice; do not modify it.
func Wasm() []byte { return wasm() }

// ImportsEnvFoo is the smallest module that imports a function from outside the guest ABI:
// env.foo, of type () -> (). It has no code, no memory and no exports; it exists to be refused.
var ImportsEnvFoo = []byte{
	0x00, 0x61, 0x73, 0x6d, // magic: "\0asm"
	0x01, 0x00, 0x00, 0x00, // binary format version 1

	0x01,       // section 1: types
	0x04,       //   section size: 4 bytes
	0x01,       //   one type
	0x60,       //     a function type
	0x00, 0x00, //     with no parameters and no results

	0x02,             // section 2: imports
	0x0b,             //   section size: 11 bytes
	0x01,             //   one import
	0x03,             //     module name: 3 bytes
	0x65, 0x6e, 0x76, //       "env"
	0x03,             //     field name: 3 bytes
	0x66, 0x6f, 0x6f, //       "foo"
	0x00, //     kind: function
	0x00, //     of type 0
}
