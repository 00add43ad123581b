package profiles

// propagateTrace reads propagate_trace: whether the run's forwarded calls carry a W3C
// traceparent upstream, so the API's own spans join the agent's trace. Off by default: a
// traceparent tells the API which trace (and so which agent session) a call belongs to.
func (d *decoder) propagateTrace(v any) bool {
	if v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		d.fail("propagate_trace", "must be true or false")
	}
	return b
}
