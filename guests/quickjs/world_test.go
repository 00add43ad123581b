package quickjs_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
)

// TestToolWorld: the globals a tool sees are the ECMAScript ones, the web globals the engine
// adds, and what the preamble adds; nothing of quickjs-libc.
func TestToolWorld(t *testing.T) {
	r := runTool(t, nil, runInput{Tool: `return Object.getOwnPropertyNames(globalThis).sort();`})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var names []string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &names))
	for _, want := range []string{"api", "sleep", "console", "URL", "URLSearchParams", "TextEncoder", "TextDecoder",
		"atob", "btoa", "structuredClone", "JSON", "Promise", "BigInt", "Proxy", "Reflect", "WeakRef"} {
		assert.Contains(t, names, want)
	}
	for _, absent := range []string{"std", "os", "scriptArgs", "print", "__plimsoll", "performance", "require", "process", "setTimeout", "fetch", "WebAssembly"} {
		assert.NotContains(t, names, absent)
	}
}

func TestWebGlobals(t *testing.T) {
	tests := []struct{ name, tool, want string }{
		{"TextEncoder", `return Array.from(new TextEncoder().encode("hé😀"));`, `[104,195,169,240,159,152,128]`},
		{"TextEncoder lone surrogate", `return Array.from(new TextEncoder().encode("\ud800"));`, `[239,191,189]`},
		{"TextDecoder", `return new TextDecoder().decode(new Uint8Array([0xef,0xbb,0xbf,104,195,169,0xff]));`, `"hé\ufffd"`},
		{"TextDecoder fatal", `try { new TextDecoder("utf-8", {fatal: true}).decode(new Uint8Array([0xff])); return "no error"; } catch (e) { return e.name; }`, `"TypeError"`},
		{"atob btoa", `return [btoa("hi!"), atob("aGkh")];`, `["aGkh","hi!"]`},
		{"structuredClone", `const a = {d: new Date(0), m: new Map([[1, {x: [1, 2]}]]), s: new Set([1]), u: new Uint8Array([1, 2])}; a.self = a;
const b = structuredClone(a);
return [b !== a, b.self === b, b.d.getTime(), b.m.get(1).x, [...b.s], Array.from(b.u), b.m.get(1) !== a.m.get(1)];`, `[true,true,0,[1,2],[1],[1,2],true]`},
		{"structuredClone function", `try { structuredClone(() => 1); return "no error"; } catch (e) { return e.name; }`, `"DataCloneError"`},
		{"URL parts", `const u = new URL("HTTPS://user:pw@Example.COM:443/a/./b/../c%20d?x=1&y=a+b#frag");
return [u.href, u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin, u.searchParams.get("y")];`,
			`["https://user:pw@example.com/a/c%20d?x=1&y=a+b#frag","https:","user","pw","example.com","example.com","","/a/c%20d","?x=1&y=a+b","#frag","https://example.com","a b"]`},
		{"URL relative", `return [new URL("../x?q", "http://h/a/b/c").href, new URL("/y", "http://h:8080/a").href, new URL("//o/p", "https://h/").href, new URL("?z", "http://h/p").href];`,
			`["http://h/a/x?q","http://h:8080/y","https://o/p","http://h/p?z"]`},
		{"URL searchParams write-through", `const u = new URL("http://h/p?a=1"); u.searchParams.append("b", "x y"); u.searchParams.set("a", "2"); return u.href;`, `"http://h/p?a=2&b=x+y"`},
		{"URL non-special", `const u = new URL("mailto:someone@example.com"); return [u.protocol, u.pathname, u.href];`, `["mailto:","someone@example.com","mailto:someone@example.com"]`},
		{"URL invalid", `try { new URL("not a url"); return "no error"; } catch (e) { return [e.name, URL.canParse("http://x"), URL.canParse("nope")]; }`, `["TypeError",true,false]`},
		{"URL JSON", `return JSON.stringify({u: new URL("http://h/ä")});`, `"{\"u\":\"http://h/%C3%A4\"}"`},
		{"URLSearchParams", `const p = new URLSearchParams("?a=1&b=2&a=3&c=%20x+y");
p.delete("b"); p.sort();
return [p.getAll("a"), p.get("c"), p.has("b"), p.toString(), [...new URLSearchParams({k: "v!*'()~"})].join(), new URLSearchParams([["x", "1"]]).toString(), p.size];`,
			`[["1","3"]," x y",false,"a=1&a=3&c=+x+y","k,v!*'()~","x=1",3]`},
		{"Math.random is not seeded alike", `return Math.random() !== Math.random();`, `true`},
		{"Date.now is the real clock", `return Math.abs(Date.now() - input.now) < 60000;`, `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTool(t, nil, runInput{Tool: tt.tool, Input: map[string]any{"now": time.Now().UnixMilli()}})
			require.Equal(t, int(abi.ExitOK), int(r.code), r)
			assert.JSONEq(t, tt.want, r.stdout)
		})
	}
}

// TestDeadline: with deadline_unix_ms the engine's interrupt check stops a runaway itself, with
// the deadline limit line last.
func TestDeadline(t *testing.T) {
	for name, tool := range map[string]string{
		"loop":             `for (;;) {}`,
		"swallowed":        `for (;;) { try { for (;;) {} } catch (e) {} }`,
		"regex":            `return /^(a+)+$/.test("a".repeat(40) + "b");`,
		"regex in split":   `return ("a".repeat(40) + "b").split(/(a+)+$/).length;`, // split's search (patches/)
		"regex in replace": `return ("a".repeat(40) + "b").replace(/(a+)+$/g, "$1");`,
		"regex in match":   `return ("a".repeat(40) + "b").match(/(a+)+$/g);`,
		"split's search":   `return "ab".repeat(2e7).split(/c/).length;`, // one long search, no backtracking
		"await loop":       `for (;;) await null;`,
		"sleep past it":    `sleep(3600e3); return "woke";`,
		"caught in sleep":  `try { sleep(3600e3); } catch (e) {} return "caught";`,
		"native C loop":    `return Array.prototype.join.call({length: 2 ** 31}).length;`, // the loop countdown
		"BigInt in C":      `return String(10n ** (10n ** 7n)).length;`,
	} {
		t.Run(name, func(t *testing.T) {
			deadline := time.Now().Add(200 * time.Millisecond).UnixMilli()
			stdin := `{"tool":` + strconv.Quote(tool) + `,"deadline_unix_ms":` + strconv.FormatInt(deadline, 10) + `}`
			in := newInstance(t)
			if strings.Contains(name, "sleep") {
				// the test host does not bound sleeps by a deadline: use a short one
				stdin = strings.Replace(stdin, "3600e3", "300", 1)
			}
			r := in.run(t, &scriptedHost{}, []byte(stdin))
			require.Equal(t, int(abi.ExitLimited), int(r.code), r)
			assert.True(t, strings.HasSuffix(r.stderr, "plimsoll: limit: "+jsguest.LimitDeadline+"\n"), r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
}

// TestOutOfMemory: an allocation the memory limit refuses ends the run with the memory limit line.
func TestOutOfMemory(t *testing.T) {
	for name, tool := range map[string]string{
		"buffers": `const keep = []; for (;;) keep.push(new ArrayBuffer(1 << 20));`,
		"caught":  `const keep = []; for (;;) { try { keep.push(new ArrayBuffer(1 << 24)); } catch (e) { return "caught " + e.message; } }`,
	} {
		t.Run(name, func(t *testing.T) {
			r := runTool(t, nil, runInput{Tool: tool})
			if name == "caught" {
				// The tool may catch it; the run then goes on as the tool decides.
				require.Equal(t, int(abi.ExitOK), int(r.code), r)
				assert.Equal(t, `"caught out of memory"`, r.stdout)
				return
			}
			require.Equal(t, int(abi.ExitLimited), int(r.code), r)
			assert.True(t, strings.HasSuffix(r.stderr, "plimsoll: limit: "+jsguest.LimitMemory+"\n"), r.stderr)
		})
	}
}

// TestDeadlineWhileReporting: a thrown value whose toString never returns still ends the run at
// the deadline, not as a failure.
func TestDeadlineWhileReporting(t *testing.T) {
	deadline := time.Now().Add(200 * time.Millisecond).UnixMilli()
	tool := `throw {toString() { for (;;) {} }, toJSON() { for (;;) {} }};`
	r := newInstance(t).run(t, &scriptedHost{}, []byte(`{"tool":`+strconv.Quote(tool)+`,"deadline_unix_ms":`+strconv.FormatInt(deadline, 10)+`}`))
	require.Equal(t, int(abi.ExitLimited), int(r.code), r)
	assert.True(t, strings.HasSuffix(r.stderr, "plimsoll: limit: "+jsguest.LimitDeadline+"\n"), r.stderr)
}
