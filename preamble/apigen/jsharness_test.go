package apigen

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// fakeGeneric stands in for the generic preamble: api.call records each call and answers 200;
// the shortcuts are markers, so a test can see that the generated preamble left them alone.
const fakeGeneric = `
var calls = [];
var api = {
  call: function (method, path, opts) {
    calls.push({method: method, path: path, opts: opts});
    return Promise.resolve({status: 200, ok: true, headers: {}, body: "", json: function () { return null; }, text: function () { return ""; }});
  },
  get: function () { return "generic get"; },
  post: function () { return "generic post"; },
  put: function () { return "generic put"; },
  patch: function () { return "generic patch"; },
  "delete": function () { return "generic delete"; }
};
`

// recorded is one api.call as the fake saw it.
type recorded struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Opts   struct {
		Query   *string           `json:"query"`
		Headers map[string]string `json:"headers"`
		Body    *string           `json:"body"`
	} `json:"opts"`
}

// jsVM is a goja runtime with the fake generic preamble and a generated preamble loaded.
type jsVM struct {
	t  testing.TB
	vm *goja.Runtime
}

func loadPreamble(t testing.TB, preamble string) *jsVM {
	t.Helper()
	vm := goja.New()
	_, err := vm.RunString(fakeGeneric)
	require.NoError(t, err)
	_, err = vm.RunString(preamble)
	require.NoError(t, err, "the generated preamble must parse and load")
	return &jsVM{t: t, vm: vm}
}

// call runs one JS expression, a generated function's call, and returns the calls it recorded
// and the message of the Error its Promise rejected with ("" when it did not reject).
func (j *jsVM) call(expr string) ([]recorded, string) {
	j.t.Helper()
	_, err := j.vm.RunString("calls = []; var lastError = null;")
	require.NoError(j.t, err)
	// A generated function never throws: it returns a Promise, rejected on bad arguments.
	// goja runs the promise jobs when RunString returns.
	_, err = j.vm.RunString(`(function () {
  var p = ` + expr + `;
  if (!(p instanceof Promise)) { throw new Error("not a Promise"); }
  p.then(null, function (e) { lastError = e instanceof Error ? e.message : "not an Error: " + e; });
})();`)
	if err != nil {
		var exc *goja.Exception
		require.True(j.t, errors.As(err, &exc), "not a JS exception: %v", err)
		require.Fail(j.t, "threw instead of rejecting", "%s: %v", expr, err)
	}
	msg := j.eval("lastError === null ? '' : lastError")
	v, rerr := j.vm.RunString("JSON.stringify(calls)")
	require.NoError(j.t, rerr)
	var out []recorded
	require.NoError(j.t, json.Unmarshal([]byte(v.String()), &out))
	return out, msg
}

// one runs expr and requires exactly one recorded call and no error.
func (j *jsVM) one(expr string) recorded {
	j.t.Helper()
	calls, msg := j.call(expr)
	require.Empty(j.t, msg, "%s threw", expr)
	require.Len(j.t, calls, 1, expr)
	return calls[0]
}

// refuse runs expr and requires that its Promise rejected with exactly want and no call was made.
func (j *jsVM) refuse(expr, want string) {
	j.t.Helper()
	calls, msg := j.call(expr)
	require.Equal(j.t, want, msg, expr)
	require.Empty(j.t, calls, "%s must not call the API", expr)
}

func (j *jsVM) eval(expr string) string {
	j.t.Helper()
	v, err := j.vm.RunString(expr)
	require.NoError(j.t, err, expr)
	return v.String()
}

func strp(s string) *string { return &s }
