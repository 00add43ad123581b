package quickjs_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

func TestRunResults(t *testing.T) {
	tests := []struct {
		name   string
		in     runInput
		stdout string
	}{
		{"hello", runInput{Tool: `return "hello " + input.name`, Input: map[string]any{"name": "world"}}, `"hello world"`},
		{"input absent is null", runInput{Tool: `return input`}, `null`},
		{"undefined is null", runInput{Tool: `const x = 1;`}, `null`},
		{"top-level await", runInput{Tool: `const v = await Promise.resolve(41); return {v: v + 1}`}, `{"v":42}`},
		{"input in scope", runInput{Tool: `return input.xs.map((x) => x * 2)`, Input: map[string]any{"xs": []int{1, 2, 3}}}, `[2,4,6]`},
		{"no require or fetch", runInput{Tool: `return [typeof require, typeof fetch, typeof __plimsoll, typeof process, typeof setTimeout]`},
			`["undefined","undefined","undefined","undefined","undefined"]`},
		{"preamble globals", runInput{Tool: `return [typeof api.call, typeof api.get, typeof api.delete, typeof sleep, typeof console.log]`},
			`["function","function","function","function","function"]`},
		{"extra preamble", runInput{
			Preamble: `api.greet = async (who) => "hi " + who; const ANSWER = 42;`,
			Tool:     `return [await api.greet("you"), ANSWER]`,
		}, `["hi you",42]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTool(t, nil, tt.in)
			require.Equal(t, int(abi.ExitOK), int(r.code), r)
			assert.Equal(t, tt.stdout, r.stdout)
		})
	}
}

// TestHostStdinShape runs the stdin the host sends: every field present, empty strings for no
// preamble and no name.
func TestHostStdinShape(t *testing.T) {
	r := newInstance(t).run(t, &scriptedHost{}, []byte(`{"tool":"throw new Error(\"x\")","input":null,"preamble":"","name":""}`))
	require.Equal(t, int(abi.ExitFailed), int(r.code), r)
	assert.Equal(t, "Uncaught Error: x\n    at tool.js:1:11\n", r.stderr)
}

// TestHostStdinEscapes runs the host's shape with what encoding/json escapes (quotes, newlines,
// <, > and &, U+2028), raw non-ASCII text, an escaped surrogate pair and an input whose strings
// look like the request's own syntax: the runtime decodes it as encoding/json would.
func TestHostStdinEscapes(t *testing.T) {
	tool := "return [input, \"<&>\", \"é😀\", \"\u2028\".length, \"\\ud83d\\ude00\",\n  1];"
	stdin, err := json.Marshal(struct {
		Tool     string          `json:"tool"`
		Input    json.RawMessage `json:"input"`
		Preamble string          `json:"preamble"`
		Name     string          `json:"name"`
	}{tool, json.RawMessage(`{"a":"x\",\"preamble\":\"}","b":[1,{"c":null}]}`), "const Z = \"\\t\";", "esc.js"})
	require.NoError(t, err)
	r := newInstance(t).run(t, &scriptedHost{}, stdin)
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, `[{"a":"x\",\"preamble\":\"}","b":[1,{"c":null}]},"<&>","é😀",1,"😀",1]`, r.stdout)

	// An escaped lone surrogate becomes U+FFFD, as encoding/json makes it.
	r = newInstance(t).run(t, &scriptedHost{}, []byte(`{"tool":"return \"\ud800\";","input":null,"preamble":"","name":""}`))
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, "\"\ufffd\"", r.stdout)
}

func TestConsoleGoesToStderr(t *testing.T) {
	r := runTool(t, nil, runInput{Tool: `
console.log("plain", 1, {a: [1, "x"]}, null, undefined);
console.error(new TypeError("bad"));
return "done";`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, `"done"`, r.stdout)
	assert.Equal(t, "plain 1 {\"a\":[1,\"x\"]} null undefined\n"+
		"TypeError: bad\n"+
		"    at tool.js:3:19\n", r.stderr)
}

func TestAPIEnvelopes(t *testing.T) {
	h := &scriptedHost{}
	r := runTool(t, h, runInput{Tool: `
await api.get("/pets", {
  query: {tag: ["a b", "c&d"], limit: 10, q: "x!*'()~é", skip: undefined},
  headers: {Accept: "application/json", "X-Tag": ["a", "b"]},
});
await api.get("/pets?limit=5", {query: "tag=x"});
await api.post("/pets", {name: "Rex", age: 3});
await api.put("/pets/1", "plain text", {headers: {"content-type": "text/plain"}});
await api.patch("/pets/1", new Uint8Array([0, 1, 2, 255]));
await api.delete("/pets/1");
await api.call("options", "/pets", {body: new ArrayBuffer(2)});
await api.post("/pets", {a: 1}, {headers: {"Content-Type": "application/merge-patch+json"}});
return null;`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	want := []string{
		`{"method":"GET","path":"/pets","query":"tag=a%20b&tag=c%26d&limit=10&q=x%21%2A%27%28%29~%C3%A9","headers":{"Accept":"application/json","X-Tag":["a","b"]}}`,
		`{"method":"GET","path":"/pets","query":"limit=5&tag=x"}`,
		`{"method":"POST","path":"/pets","headers":{"Content-Type":"application/json"},"body":"{\"name\":\"Rex\",\"age\":3}"}`,
		`{"method":"PUT","path":"/pets/1","headers":{"content-type":"text/plain"},"body":"plain text"}`,
		`{"method":"PATCH","path":"/pets/1","body_base64":"AAEC/w=="}`,
		`{"method":"DELETE","path":"/pets/1"}`,
		`{"method":"OPTIONS","path":"/pets","body_base64":"AAA="}`,
		`{"method":"POST","path":"/pets","headers":{"Content-Type":"application/merge-patch+json"},"body":"{\"a\":1}"}`,
	}
	assert.Equal(t, want, h.requests)
}

func TestAPIArgumentErrorsReject(t *testing.T) {
	r := runTool(t, nil, runInput{Tool: `
const errs = [];
for (const f of [
  () => api.get("/x", {params: {a: 1}}),
  () => api.call("TRACE", "/x"),
  () => api.get(42),
  () => api.get("/x", {query: {a: {b: 1}}}),
]) {
  try { await f(); errs.push("no error"); } catch (e) { errs.push(e.message); }
}
return errs;`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var errs []string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &errs))
	assert.Equal(t, []string{
		`api.get: unknown option "params" (allowed: query, headers)`,
		`api.call: unsupported method "TRACE" (use one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)`,
		`api.call: path must be a string`,
		`api: query parameter "a" must be a string, number, boolean, Date or an array of them`,
	}, errs)
	assert.Empty(t, r.host.requests)
}

func TestAPIResponses(t *testing.T) {
	h := &scriptedHost{respond: func(req string) string {
		switch {
		case strings.Contains(req, `"/ok"`):
			return envelope(200, map[string][]string{
				"Content-Type": {"application/json"},
				"Set-Cookie":   {"a=1", "b=2"},
			}, `{"id":42}`)
		case strings.Contains(req, `"/shed"`):
			return envelope(503, map[string][]string{
				"Plimsoll-Outcome": {"shed"},
				"Retry-After":      {"1"},
			}, `{"error":"shed","reason":"breaker open"}`)
		default:
			return `{"status":200,"headers":{},"body_base64":"aGn//w=="}`
		}
	}}
	r := runTool(t, h, runInput{Tool: `
const ok = await api.get("/ok");
const shed = await api.get("/shed");
const bin = await api.get("/bin");
return {
  ok: [ok.status, ok.ok, ok.outcome, ok.headers["content-type"], ok.headers["set-cookie"],
       ok.headerValues("Set-Cookie"), ok.headerValues("missing"), ok.json().id, ok.text()],
  shed: [shed.status, shed.ok, shed.outcome, shed.headers["retry-after"], JSON.parse(shed.body).error, shed.reason, ok.reason === undefined],
  thrown: [shed, bin].map((r) => { try { r.json(); return "no throw"; } catch (e) { return e.name + ": " + e.message; } }),
  bin: [Array.from(bin.bytes()), bin.body.length, bin.text() === bin.body],
  asJSON: JSON.parse(JSON.stringify(ok)),
  keys: Object.keys(ok),
  assigned: (() => { shed.headers = {x: "1"}; shed.outcome = "mine"; return [shed.headers, shed.outcome]; })(),
};`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, []any{200.0, true, "forwarded", "application/json", "a=1, b=2",
		[]any{"a=1", "b=2"}, []any{}, 42.0, `{"id":42}`}, got["ok"])
	assert.Equal(t, []any{503.0, false, "shed", "1", "shed", "breaker open", true}, got["shed"])
	thrown := got["thrown"].([]any)
	assert.Equal(t, "Error: json(): the broker answered 503 shed: breaker open; the API sent no body (check r.ok or r.outcome first)",
		thrown[0], "a body the broker wrote is not parsed as the API's")
	assert.True(t, strings.HasPrefix(thrown[1].(string), "SyntaxError: json(): the API's 200 answer is not JSON: "), thrown[1])
	// "hi" then 0xff 0xff: the invalid bytes decode as two U+FFFD in body.
	assert.Equal(t, []any{[]any{104.0, 105.0, 255.0, 255.0}, 4.0, true}, got["bin"])
	assert.Equal(t, map[string]any{
		"status": 200.0, "ok": true, "outcome": "forwarded",
		"headers": map[string]any{"content-type": "application/json", "set-cookie": "a=1, b=2"},
		"body":    `{"id":42}`,
	}, got["asJSON"])
	assert.Equal(t, []any{"status", "ok", "body"}, got["keys"], "headers and outcome are lazy getters")
	assert.Equal(t, []any{map[string]any{"x": "1"}, "mine"}, got["assigned"])
}

func TestLargeResponse(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB, over the guest's 64 KiB buffer
	h := &scriptedHost{respond: func(req string) string {
		if strings.Contains(req, `"/small"`) {
			return envelope(200, nil, "small")
		}
		return envelope(200, nil, big)
	}}
	r := runTool(t, h, runInput{Tool: `
const a = await api.get("/big");
const b = await api.get("/small");
const c = await api.get("/big");
const want = "0123456789abcdef".repeat(300 * 1024 / 16);
return [a.body === want, a.body.length, b.body, c.body === want];`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, `[true,307200,"small",true]`, r.stdout)
	assert.Equal(t, 2, h.fetched, "the two big responses go through host_response")
}

func TestThrownErrorFails(t *testing.T) {
	r := runTool(t, nil, runInput{Name: "pets.js", Tool: `function inner() { throw new Error("boom"); }
function outer() { inner(); }
await null;
outer();`})
	require.Equal(t, int(abi.ExitFailed), int(r.code), r)
	assert.True(t, strings.HasSuffix(r.stderr, "Uncaught Error: boom\n"+
		"    at inner (pets.js:1:30)\n"+
		"    at outer (pets.js:2:20)\n"+
		"    at pets.js:4:1\n"), r.stderr)
	assert.Empty(t, r.stdout)
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		tail  string // the last line of stderr
	}{
		{"thrown string", `{"tool":"throw 'nope'"}`, "Uncaught nope"},
		{"thrown object", `{"tool":"throw {code: 7}"}`, `Uncaught {"code":7}`},
		{"syntax error", `{"tool":"let x = ;"}`, "plimsoll: the tool does not compile: SyntaxError: unexpected token in expression: ';' (at tool.js:1:9)"},
		{"pending forever", `{"tool":"await new Promise(() => {})"}`,
			"plimsoll: the tool's promise is still pending and nothing is left to run (an await is waiting for a promise that nothing will settle)"},
		{"unknown field", `{"tool":"return 1","inputs":{}}`, `plimsoll: bad stdin: unknown field "inputs" (want tool, input, preamble, name, deadline_unix_ms)`},
		{"missing tool", `{"input":1}`, `plimsoll: bad stdin: missing field "tool"`},
		{"duplicate field", `{"tool":"1","tool":"2"}`, `plimsoll: bad stdin: duplicate field "tool"`},
		{"wrong type", `{"tool":1}`, `plimsoll: bad stdin: field "tool": want a string`},
		{"trailing data", `{"tool":"1"} {}`, `plimsoll: bad stdin: data after the JSON object`},
		{"empty", ``, `plimsoll: bad stdin: empty input, want a JSON object`},
		{"cyclic result", `{"tool":"const a = {}; a.a = a; return a"}`, "plimsoll: the tool's result cannot be turned into JSON: TypeError: circular reference"},
		{"preamble throws", `{"tool":"1","preamble":"throw new Error('bad preamble')"}`, "    at preamble.js:1:11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newInstance(t).run(t, &scriptedHost{}, []byte(tt.stdin))
			require.Equal(t, int(abi.ExitFailed), int(r.code), r)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			assert.Equal(t, tt.tail, lines[len(lines)-1], r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
}

func TestCallStackLimit(t *testing.T) {
	for name, tool := range map[string]string{
		"sync":        `function f(n) { return f(n + 1) + 1 } return f(0)`,
		"through map": `function f(n) { return [n].map((x) => f(x + 1))[0] } return f(0)`,
		"async":       `async function f(n) { return 1 + await f(n + 1) } return await f(0)`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runTool(t, nil, runInput{Tool: tool})
			require.Equal(t, int(abi.ExitLimited), int(r.code), r)
			assert.True(t, strings.HasSuffix(r.stderr, "plimsoll: limit: call stack depth exceeded (896 KiB of stack)\n"), r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
	// The engine's stack overflow is a RangeError, which a tool may catch; only an uncaught one
	// ends the run at the limit.
	t.Run("caught after await", func(t *testing.T) {
		r := runTool(t, nil, runInput{Tool: `await null; function f(n) { return f(n + 1) + 1 } try { return f(0) } catch (e) { return [e instanceof RangeError, e.message] }`})
		require.Equal(t, int(abi.ExitOK), int(r.code), r)
		assert.Equal(t, `[true,"Maximum call stack size exceeded"]`, r.stdout)
	})
	t.Run("deep but within the limit", func(t *testing.T) {
		r := runTool(t, nil, runInput{Tool: `function f(n) { return n ? 1 + f(n - 1) : 0 } return f(900)`})
		require.Equal(t, int(abi.ExitOK), int(r.code), r)
		assert.Equal(t, "900", r.stdout)
	})
}

func TestClockRandomSleep(t *testing.T) {
	before := time.Now()
	r := runTool(t, nil, runInput{Tool: `
const rs = Array.from({length: 64}, () => Math.random());
const t0 = Date.now();
await sleep(50);
const slept = Date.now() - t0;
return {now: Date.now(), slept, distinct: new Set(rs).size, inRange: rs.every((x) => x >= 0 && x < 1)};`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var got struct {
		Now      int64
		Slept    int64
		Distinct int
		InRange  bool
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.WithinDuration(t, before, time.UnixMilli(got.Now), time.Minute)
	assert.GreaterOrEqual(t, got.Slept, int64(50))
	assert.Equal(t, 64, got.Distinct)
	assert.True(t, got.InRange)
}

func TestUnhandledRejectionIsLogged(t *testing.T) {
	r := runTool(t, nil, runInput{Tool: `Promise.reject(new Error("lost")); return 1`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, "1", r.stdout)
	assert.Equal(t, "plimsoll: warning: a promise was rejected and never handled: Error: lost\n", r.stderr)
}

// BenchmarkJSHostCallRawString measures one api call from JS: the preamble builds the envelope
// with JSON.stringify, the native bridge passes raw strings through host_call to the scripted
// host, and JSON.parse plus the Response object finish it. Each sub-benchmark makes b.N calls
// inside a single run and reports µs per call. "json_only" is the JSON.stringify and JSON.parse
// of the same envelopes without a call, for comparison.
func BenchmarkJSHostCallRawString(b *testing.B) {
	const resp = `{"status":200,"headers":{"Content-Type":["application/json"]},"body":"{\"id\":42,\"name\":\"Rex\"}"}`
	for _, bc := range []struct{ name, loop string }{
		{"get", `await api.get("/pets/42")`},
		{"get_query_headers_json", `n += (await api.get("/pets/42", {query: {fields: ["id", "name"]}, headers: {Accept: "application/json"}})).json().id`},
		{"json_only", `n += JSON.parse(JSON.stringify({method: "GET", path: "/pets/42"}) && R).status`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := &scriptedHost{respond: func(string) string { return resp }}
			stdin, err := json.Marshal(runInput{
				Tool:  "const R = " + strconv.Quote(resp) + "; let n = 0;\nfor (let i = 0; i < input.n; i++) { " + bc.loop + " }\nreturn input.n;",
				Input: map[string]int{"n": b.N},
			})
			require.NoError(b, err)
			in := newInstance(b)
			b.ResetTimer()
			r := in.run(b, h, stdin)
			b.StopTimer()
			if r.code != 0 || r.stdout != strconv.Itoa(b.N) {
				b.Fatal(r)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}

// TestResponseEnvelopeDecoding: the runtime decodes the host's response envelopes itself rather
// than with JSON.parse; anything outside the shape the host sends still goes to JSON.parse, so
// every envelope reads as JSON.parse would read it.
func TestResponseEnvelopeDecoding(t *testing.T) {
	tests := []struct {
		name, envelope, want string
	}{
		{"escapes, order, astral", `{"status":200,"headers":{"B":["2"],"A":["1","x\"y"]},"body":"h\u00e9\n\"q\" \ud83d\ude00 \/\\ é"}`,
			`[200,"hé\n\"q\" 😀 /\\ é",{"b":"2","a":"1, x\"y"},["b","a"],["2"],"forwarded"]`},
		{"space and field order", " {\n \"body\" : \"x\" ,\t\"status\" : 201 } ",
			`[201,"x",{},[],[],"forwarded"]`},
		{"empty headers and values", `{"status":204,"headers":{"A":[]},"body":""}`,
			`[204,"",{"a":""},["a"],[],"forwarded"]`},
		{"float status goes to JSON.parse", `{"status":200.0,"headers":{},"body":"x"}`,
			`[200,"x",{},[],[],"forwarded"]`},
		{"duplicate header goes to JSON.parse", `{"status":200,"headers":{"A":["1"],"A":["2"]},"body":""}`,
			`[200,"",{"a":"2"},["a"],["2"],"forwarded"]`},
		{"lone surrogate goes to JSON.parse (which keeps it)", `{"status":200,"headers":{},"body":"\ud800"}`,
			`[200,"lone surrogate",{},[],[],"forwarded"]`},
		{"__proto__ header", `{"status":200,"headers":{"__proto__":["x"],"Plimsoll-Outcome":["denied"]},"body":""}`,
			`[200,"",{"__proto__":"x","plimsoll-outcome":"denied"},["__proto__","plimsoll-outcome"],["x"],"denied"]`},
		{"no headers field", `{"status":200,"body_base64":"aGk="}`,
			`[200,"hi",{},[],[],"forwarded"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &scriptedHost{respond: func(string) string { return tt.envelope }}
			r := runTool(t, h, runInput{Tool: `
const res = await api.get("/x");
const first = Object.keys(res.headers)[0];
return [res.status, res.body === "\ud800" ? "lone surrogate" : res.body, res.headers, Object.keys(res.headers),
        res.headerValues(first === undefined ? "none" : first), res.outcome];`})
			require.Equal(t, int(abi.ExitOK), int(r.code), r)
			assert.JSONEq(t, tt.want, r.stdout)
		})
	}

	t.Run("invalid JSON rejects with JSON.parse's SyntaxError", func(t *testing.T) {
		h := &scriptedHost{respond: func(string) string { return `{"status":200,` }}
		r := runTool(t, h, runInput{Tool: `
try { await api.get("/x"); return "no error"; } catch (e) { return [e instanceof SyntaxError, e.name]; }`})
		require.Equal(t, int(abi.ExitOK), int(r.code), r)
		assert.Equal(t, `[true,"SyntaxError"]`, r.stdout)
	})
}

// TestPlainGetEnvelopes: api.get(path) with a path that needs no escaping is sent by the runtime
// without running buildEnvelope and JSON.stringify; every envelope is the same as theirs.
func TestPlainGetEnvelopes(t *testing.T) {
	h := &scriptedHost{}
	r := runTool(t, h, runInput{Tool: `
for (const p of ["/pets/1", "/a b~!$&'()*+,;=:@%2F<>", "", "/x?y=1", "/q\"uote", "/back\\slash", "/tab\t", "/é", "\ud800", "/x\u2028"]) {
  await api.get(p);
}
await api.get("/pets/2", undefined);
await api.get("/pets/3", null);
return null;`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, []string{
		`{"method":"GET","path":"/pets/1"}`,
		`{"method":"GET","path":"/a b~!$&'()*+,;=:@%2F<>"}`,
		`{"method":"GET","path":""}`,
		`{"method":"GET","path":"/x","query":"y=1"}`,
		`{"method":"GET","path":"/q\"uote"}`,
		`{"method":"GET","path":"/back\\slash"}`,
		`{"method":"GET","path":"/tab\t"}`,
		`{"method":"GET","path":"/é"}`,
		`{"method":"GET","path":"\ud800"}`,
		"{\"method\":\"GET\",\"path\":\"/x\u2028\"}",
		`{"method":"GET","path":"/pets/2"}`,
		`{"method":"GET","path":"/pets/3"}`,
	}, h.requests)
}

// TestResponseConstruction: responses the runtime builds are what the preamble's Response
// constructor builds, including for envelopes it hands to that constructor unchanged.
func TestResponseConstruction(t *testing.T) {
	tests := []struct {
		name, envelope, want string
	}{
		{"plain", `{"status":200,"headers":{},"body":"x"}`,
			`[200,true,"x",["status","ok","body"],1,true,"forwarded"]`},
		{"no status", `{"headers":{},"body":"x"}`,
			`[null,false,"x",["status","ok","body"],1,true,"forwarded"]`},
		{"no body", `{"status":500}`,
			`[500,false,"",["status","ok","body"],1,true,"forwarded"]`},
		{"base64 over body", `{"status":200,"body":"ignored","body_base64":"aGk="}`,
			`[200,true,"hi",["status","ok","body"],1,true,"forwarded"]`},
		{"not an object", `null`, `"TypeError"`},
		{"bad base64", `{"status":200,"body_base64":"!!"}`, `"TypeError: plimsoll: invalid base64 in a response: illegal base64 data at input byte 0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &scriptedHost{respond: func(string) string { return tt.envelope }}
			for _, call := range []string{`api.get("/x")`, `api.call("GET", "/x")`} {
				r := runTool(t, h, runInput{Tool: `
let res;
try { res = await ` + call + `; } catch (e) { return e instanceof TypeError && e.message.startsWith("plimsoll") ? String(e) : e.name; }
const proto = Object.getPrototypeOf(res);
return [res.status === undefined ? null : res.status, res.ok, res.body, Object.keys(res),
        Object.getOwnPropertySymbols(res).length, typeof proto.json === "function" && proto.constructor.name === "Response",
        res.outcome];`})
				require.Equal(t, int(abi.ExitOK), int(r.code), r)
				assert.JSONEq(t, tt.want, r.stdout, call)
			}
		})
	}
}

// TestReplacedBuiltinsAreUsed: the preamble looks JSON.stringify, JSON.parse and the string
// methods it uses up when a call is made, so a tool that replaces them gets what it asked for
// (the security suite sends raw envelopes that way); the runtime's shortcuts step aside.
func TestReplacedBuiltinsAreUsed(t *testing.T) {
	h := &scriptedHost{}
	r := runTool(t, h, runInput{Tool: `
const seen = [];
const parse = JSON.parse, stringify = JSON.stringify, upper = String.prototype.toUpperCase;
JSON.parse = function (t) { seen.push(t.slice(0, 10)); return parse(t); };
await api.get("/a");
await api.call("GET", "/a2");
JSON.parse = parse;
JSON.stringify = function () { JSON.stringify = stringify; return '{"method":"GET","path":"/raw"}'; };
await api.get("/b");
String.prototype.toUpperCase = function () { return "DELETE"; };
await api.get("/c");
String.prototype.toUpperCase = upper;
await api.get("/d");
return seen;`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, `["{\"status\":","{\"status\":"]`, r.stdout)
	assert.Equal(t, []string{
		`{"method":"GET","path":"/a"}`,
		`{"method":"GET","path":"/a2"}`,
		`{"method":"GET","path":"/raw"}`,
		`{"method":"DELETE","path":"/c"}`,
		`{"method":"GET","path":"/d"}`,
	}, h.requests)
}

// Calls the host has no room for (ERR_INFLIGHT) wait in the engine and are submitted, in order,
// as responses are read; every promise resolves with its own call's response.
func TestCallsOverTheInflightLimitWaitInTheEngine(t *testing.T) {
	h := &scriptedHost{maxHeld: 3, respond: func(req string) string {
		var env struct{ Path string }
		if err := json.Unmarshal([]byte(req), &env); err != nil {
			panic(err)
		}
		return envelope(200, nil, env.Path)
	}}
	r := runTool(t, h, runInput{Tool: `
const rs = await Promise.all(Array.from({length: 20}, (_, i) => i % 2 ? api.get("/p/" + i) : api.call("GET", "/p/" + i)));
return rs.map((r) => r.body);`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var want, paths []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("/p/%d", i))
		paths = append(paths, fmt.Sprintf(`{"method":"GET","path":"/p/%d"}`, i))
	}
	got, _ := json.Marshal(want)
	assert.Equal(t, string(got), r.stdout)
	assert.Equal(t, paths, h.requests, "submitted in the order the tool made them")
	assert.Positive(t, h.refused, "the host refused some submissions, which waited")
}

// Timers of sleeps made while calls are in flight resolve in order of their time, and the tool
// sees the calls' responses before a longer sleep ends.
func TestSleepsWithCallsInFlightAreTimers(t *testing.T) {
	r := runTool(t, nil, runInput{Tool: `
const order = [];
const call = api.get("/x").then(() => order.push("call"));
await Promise.all([sleep(60).then(() => order.push("60")), sleep(20).then(() => order.push("20")), call]);
return order;`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	assert.Equal(t, `["call","20","60"]`, r.stdout)
}
