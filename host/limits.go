package host

import "github.com/plimsoll/plimsoll/broker"

// Limits is the registry of per-API concurrency limits the runtime's runs share: a profile with
// a concurrency block gets one limit (or one per route) for every run of this Runtime, so the
// calls of many runs to one API add up against one ceiling. A daemon reads and retunes it.
func (rt *Runtime) Limits() *broker.Limits { return rt.limits }
