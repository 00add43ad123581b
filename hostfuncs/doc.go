// Package hostfuncs is the host side of the plimsoll guest ABI, version 2 (preamble/ABI.md): the
// `plimsoll` import module with v1's blocking host_call and host_response and v2's concurrent
// host_submit, host_wait and host_result (concurrent.go), Extism's plimsoll_call (extism.go), and
// the check that a guest imports nothing else (imports.go).
//
// One runtime defines the module once (Instantiate). Which run a call belongs to travels in the
// context that the host passes to the guest's exported function: WithSession attaches a
// *Session, and host_call (or host_submit) hands the request bytes to that run's broker. A guest
// is single-threaded: its calls reach a Session from one goroutine at a time, while v2's calls do
// their I/O on goroutines of their own, bounded by limits.max_inflight.
//
// The names, signatures and return codes come from package abi. abi.ErrNoRun means no run is
// attached to the call's context: the host called the guest outside a run (a bug in the host, or
// an _initialize that makes calls); nothing is recorded.
//
// The host never allocates from a size the guest declares beyond limits.max_request_bytes: an
// envelope over the cap is refused without being read, and ranges are checked against the guest's
// memory before anything is copied.
package hostfuncs
