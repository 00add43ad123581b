//go:build wasip1

package main

import (
	"runtime"
	"strconv"
	"unsafe"
)

// The plimsoll imports, guest ABI v1 (preamble/ABI.md). Pointers are offsets in linear memory.

//go:wasmimport plimsoll host_call
func hostCallImport(reqPtr, reqLen, respPtr, respCap uint32) int32

//go:wasmimport plimsoll host_response
func hostResponseImport(ptr, capacity uint32) int32

// respBuf receives responses that fit; larger ones are fetched with host_response into a buffer
// of their own.
var respBuf = make([]byte, 64<<10)

// hostError is a failed host_call or host_response: a negative ABI result, or a length the ABI
// does not allow. It means a bug in the runtime or the host, not a refused call: the broker
// answers refusals with a response envelope.
type hostError struct {
	fn   string
	code int32
}

func (e *hostError) Error() string {
	name := ""
	switch e.code {
	case -1:
		name = " (ERR_BOUNDS)"
	case -2:
		name = " (ERR_NO_PENDING)"
	case -3:
		name = " (ERR_TOO_SMALL)"
	}
	return "plimsoll: " + e.fn + " returned " + strconv.Itoa(int(e.code)) + name
}

// hostCall sends one request envelope and returns the response envelope, both as JSON text.
func hostCall(req string) (string, error) {
	n := hostCallImport(stringAddr(req), uint32(len(req)), bytesAddr(respBuf), uint32(len(respBuf)))
	runtime.KeepAlive(req)
	if n < 0 {
		return "", &hostError{fn: "host_call", code: n}
	}
	if int(n) <= len(respBuf) {
		return string(respBuf[:n]), nil
	}
	big := make([]byte, n)
	m := hostResponseImport(bytesAddr(big), uint32(len(big)))
	if m != n {
		return "", &hostError{fn: "host_response", code: m}
	}
	return unsafe.String(&big[0], len(big)), nil
}

func bytesAddr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

func stringAddr(s string) uint32 {
	if len(s) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}
