package broker_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// A route pattern forced open sheds every call it covers, also a call that a pattern listed
// before it grants: the operator forced the pattern, not the grant's first match.
func TestForcedRouteShedsEveryCallItCovers(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, "{}"), nil }}
	p := writeProfile(t, "http://api.test", "routes:\n  - GET /pets/mine\n  - GET /pets/*\n  - GET /toys\n")
	r, err := broker.New(broker.Config{Profile: p, Transport: up,
		ForcedRoute: func(route string) (string, bool) { return "INC-9", route == "GET /pets/*" }})
	require.NoError(t, err)

	for _, path := range []string{"/pets/mine", "/pets/7"} {
		g := get(t, r, path)
		assert.Equal(t, 503, g.Status, path)
	}
	assert.Equal(t, 200, get(t, r, "/toys").Status, "a route not forced goes on")
	tr := r.Trace()
	require.Len(t, tr, 3)
	assert.Equal(t, "GET /pets/mine", tr[0].Route, "the trace names the route that granted the call")
	assert.Equal(t, broker.ForcedRouteReason+"GET /pets/*: INC-9", tr[0].Reason, "and the pattern that shed it")
	assert.Equal(t, broker.ForcedRouteReason+"GET /pets/*: INC-9", tr[1].Reason)
	assert.Len(t, up.requests(), 1, "only /toys reached the upstream")
}
