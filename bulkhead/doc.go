// Package bulkhead is the adaptive concurrency limit one process keeps per upstream API, shared
// by the runs that call it. It admits as many calls at once as the API can absorb now, learned
// from the latency of the calls it let through (a fixed limit, AIMD or Gradient2), queues the
// rest by criticality, and sheds the least important first.
//
// Like breaker, it is pure: no I/O and no clock. Every method takes the time as a parameter;
// the caller (the broker) owns timers and waiting. A Ticket's Done channel is how a waiting call
// learns it was admitted or shed.
//
// It is not a breaker: a shed call means "busy now", never "broken", and it teaches the limit
// nothing.
package bulkhead
