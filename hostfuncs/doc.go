// Package hostfuncs is the host side of the plimsoll guest ABI (preamble/ABI.md): the `plimsoll`
// import module with host_call and host_response, and the check that a guest imports nothing else.
//
// One runtime defines the module once (Instantiate). Which run a call belongs to travels in the
// context that the host passes to the guest's exported function: WithSession attaches a
// *Session, and host_call hands the request bytes to that run's broker. A guest is
// single-threaded, so a Session is used by one goroutine at a time; the host reads its state only after the guest returns.
//
// The names, signatures and return codes come from package abi. abi.ErrNoRun means no run is
// attached to the call's context: the host called the guest outside a run (a bug in the host, or
// an _initialize that makes calls); nothing is recorded.
//
// The host never allocates from a size the guest declares beyond limits.max_request_bytes: an
// envelope over the cap is refused without being read, and ranges are checked against the guest's
// memory before anything is copied.
package hostfuncs
