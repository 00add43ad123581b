package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tagged = "testdata/tagged.yaml"

func TestFilters(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		routes string
	}{
		{nil, "GET /orders\nPOST /orders\nGET /orders/*\nDELETE /orders/*\nGET /users\nHEAD /users\n"},
		{[]string{"-methods", "GET,head"}, "GET /orders\nGET /orders/*\nGET /users\nHEAD /users\n"},
		{[]string{"-tags", "orders"}, "GET /orders\nPOST /orders\nGET /orders/*\nDELETE /orders/*\n"},
		{[]string{"-tags", "orders", "-exclude", "admin"}, "GET /orders\nPOST /orders\nGET /orders/*\n"},
		{[]string{"-methods", "GET", "-exclude", "users"}, "GET /orders\nGET /orders/*\n"},
	} {
		code, out, errOut := runCLI(append([]string{"-emit", "routes", tagged}, tc.args...)...)
		require.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		assert.Equal(t, tc.routes, out, "%v", tc.args)
	}

	// The filtered preamble has only the kept functions.
	code, out, _ := runCLI("-emit", "preamble", "-methods", "GET", tagged)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "listOrders")
	assert.NotContains(t, out, "deleteOrder")
}

func TestFiltersRefuseWhatTheDocumentLacks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-methods", "GET,FETCH"}, `specgen: -methods: "FETCH" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{[]string{"-tags", "billing"}, `specgen: -tags: no operation is tagged "billing" (tags: admin, orders, users)`},
		{[]string{"-exclude", "Orders"}, `specgen: -exclude: no operation is tagged "Orders" (tags: admin, orders, users)`},
		{[]string{"-methods", "PUT"}, "specgen: the filters (-methods, -tags, -exclude) keep no operation of the document"},
	} {
		code, out, errOut := runCLI(append([]string{"-emit", "routes", tagged}, tc.args...)...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, out)
		assert.Equal(t, tc.msg+"\n", errOut, "%v", tc.args)
	}
}
