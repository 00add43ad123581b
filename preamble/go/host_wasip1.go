//go:build wasip1 && !plimsoll_extism

package plimsoll

import (
	"runtime"
	"unsafe"
)

// The plimsoll imports, guest ABI v2 (preamble/ABI.md): v1's host_call and host_response, v2's
// host_submit, host_wait and host_result. Pointers are offsets in linear memory.

//go:wasmimport plimsoll host_call
func hostCallImport(reqPtr, reqLen, respPtr, respCap uint32) int32

//go:wasmimport plimsoll host_response
func hostResponseImport(ptr, capacity uint32) int32

//go:wasmimport plimsoll host_submit
func hostSubmitImport(reqPtr, reqLen uint32) int32

//go:wasmimport plimsoll host_wait
func hostWaitImport(idsPtr, idsCap, timeoutMs uint32) int32

//go:wasmimport plimsoll host_result
func hostResultImport(id int32, ptr, capacity uint32) int32

type wasmABI struct{}

func (wasmABI) submit(req []byte) int32 {
	n := hostSubmitImport(addr(req), uint32(len(req)))
	runtime.KeepAlive(req)
	return n
}

func (wasmABI) wait(ids []uint32, timeoutMs uint32) int32 {
	n := hostWaitImport(uint32(uintptr(unsafe.Pointer(&ids[0]))), uint32(4*len(ids)), timeoutMs)
	runtime.KeepAlive(ids)
	return n
}

func (wasmABI) result(id int32, buf []byte) int32 {
	n := hostResultImport(id, addr(buf), uint32(len(buf)))
	runtime.KeepAlive(buf)
	return n
}

func (wasmABI) hostCall(req, resp []byte) int32 {
	n := hostCallImport(addr(req), uint32(len(req)), addr(resp), uint32(len(resp)))
	runtime.KeepAlive(req)
	runtime.KeepAlive(resp)
	return n
}

func (wasmABI) hostResponse(buf []byte) int32 {
	n := hostResponseImport(addr(buf), uint32(len(buf)))
	runtime.KeepAlive(buf)
	return n
}

func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

var host = &conn{imports: wasmABI{}}

// calls is the dispatcher Go and Wait use.
var calls = &dispatcher{imports: wasmABI{}}

// roundTrip is the transport Do uses; tests on other platforms replace it.
var roundTrip = host.exchange
