// Package breaker is the circuit breaker that the broker keeps for one run.
//
// When the customer's API answers a forwarded call with 503 (degraded) or 429 (this caller has
// spent its allowance), the breaker opens a window for the Retry-After the API asked for
// (1 s when it gave none, at most 30 s). While the window is open every call is shed: the broker
// answers it itself and the API never sees it. A 503 window can end early: if the run's grant
// declares a health check, one call per second is picked to probe it, and the first 2xx closes
// the breaker on the spot. A window that has seen any 429 is never probed, because a healthy
// service says nothing about whether a caller's quota has reset; it is waited out.
//
// The package is a pure state machine. It does no I/O, starts no goroutines, takes no locks and
// never reads the clock: every method is given now. The broker owns the mutex, the clock and the
// network, so the rules here can be tested exactly, at chosen instants, without sleeping, and
// the same inputs always give the same decisions.
//
// A Breaker belongs to one run. Nothing is shared between Breakers, and the package keeps no
// mutable state of its own.
package breaker
