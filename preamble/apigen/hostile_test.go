package apigen

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestHostileDocument(t *testing.T) {
	s := loadStore(t, "testdata/hostile.yaml")
	pre, err := s.Preamble()
	require.NoError(t, err)

	// Only printable ASCII and newlines: nothing can end a string early or break a line.
	for i := 0; i < len(pre); i++ {
		c := pre[i]
		require.True(t, c == '\n' || c >= 0x20 && c < 0x7f, "byte %#x at %d", c, i)
	}
	require.NotContains(t, strings.ToLower(pre), "</script")
	require.NotContains(t, pre, "*/")
	// Document text is data, inside the string literals install() takes; the code has none.
	code := pre[:strings.Index(pre, "install({")]
	require.NotContains(t, code, "alert(1)")
	require.NotContains(t, code, "attacker")

	js := loadPreamble(t, pre)

	// Function names: safe identifiers, never reserved, never colliding, never generic.
	// The client builds a function when a tool first touches its name; every name the document
	// gave is one, and none is an own property of api until then.
	require.Equal(t, "call delete get patch post put", js.eval(`Object.keys(api).sort().join(" ")`))
	var names []string
	for _, op := range s.Ops {
		require.Equal(t, "function", js.eval(`typeof api[`+JSString(op.Func)+`]`), op.Func)
		names = append(names, op.Func)
	}
	sort.Strings(names)
	require.Equal(t, []string{
		"_123abc", "__proto___", "aB", "aB2", "aBCD", "alert1", "call_", "constructor_", "delete_",
		"eval_", "get_", "lineBreak", "return_", "scriptScriptAlert1Script", "sepXY", "t", "then_",
	}, names)
	for _, n := range names {
		require.True(t, IsIdent(n), n)
	}
	require.Equal(t, "undefined", js.eval(`typeof api.then`), "api must not become a thenable")
	for _, m := range []string{"get", "post", "put", "patch", "delete"} {
		require.Equal(t, "generic "+m, js.eval(`api["`+m+`"]()`))
	}

	c := js.one(`api.aBCD({"we\"ird'name": "v", "a&b=c#d": "x y"})`)
	require.Equal(t, "GET", c.Method)
	require.Equal(t, "/a", c.Path)
	require.Equal(t, strp("we%22ird%27name=v&a%26b%3Dc%23d=x%20y"), c.Opts.Query)
	js.refuse(`api.aBCD({})`, `aBCD: missing required parameter "we\"ird'name"`)

	c = js.one(`api.alert1({body: {"</script>": "x", "x\ny": "\u2028"}})`)
	require.Equal(t, "POST", c.Method)
	require.Equal(t, "/a", c.Path)
	require.Equal(t, strp("{\"</script>\":\"x\",\"x\\ny\":\"\u2028\"}"), c.Opts.Body)

	c = js.one(`api.scriptScriptAlert1Script({id: "1"})`)
	require.Equal(t, "/b/1", c.Path)
	c = js.one(`api.delete_({id: "x y"})`)
	require.Equal(t, "DELETE", c.Method)
	require.Equal(t, "/b/x%20y", c.Path)

	for expr, method := range map[string]string{
		"api.lineBreak()": "GET", "api.__proto___()": "HEAD", "api.call_()": "POST", "api.sepXY()": "PUT",
		"api.get_()": "PATCH", "api.constructor_()": "DELETE", "api.then_()": "OPTIONS",
	} {
		c = js.one(expr)
		require.Equal(t, method, c.Method, expr)
		require.Equal(t, "/c", c.Path, expr)
	}
	for expr, method := range map[string]string{
		"api._123abc()": "GET", "api.t()": "POST", "api.return_()": "PUT", "api.aB()": "PATCH", "api.aB2()": "DELETE",
	} {
		c = js.one(expr)
		require.Equal(t, method, c.Method, expr)
		require.Equal(t, "/d", c.Path, expr)
	}

	// A path parameter named __proto__ and a query parameter named body get keys that work.
	c = js.one(`api.eval_({path___proto__: "v", query_body: "q"})`)
	require.Equal(t, "/e/v", c.Path)
	require.Equal(t, strp("body=q"), c.Opts.Query)
	require.Nil(t, c.Opts.Headers, "refused and invalid header parameters are left out")
	js.refuse(`api.eval_({path___proto__: "v", Cookie: "a=b"})`, `eval_: unknown parameter "Cookie" (known: path___proto__, query_body)`)

	require.ElementsMatch(t, []string{
		`specgen: GET /e/{__proto__}: header parameter "X-A"B" left out: not a valid header name`,
		`specgen: GET /e/{__proto__}: header parameter "Cookie" left out: the broker refuses it from a guest`,
		`specgen: GET /e/{__proto__}: cookie parameter "session" left out: the broker refuses a guest-set Cookie header`,
	}, s.Warnings())
}

func TestHostileDescriptionStaysOnItsLines(t *testing.T) {
	s := loadStore(t, "testdata/hostile.yaml")
	d := s.Description()
	require.NotContains(t, d, "\r")
	require.NotContains(t, d, "\u2028")
	require.NotContains(t, d, "\u2029")
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	// 6 header lines (the JS and the Python example among them), "Functions:", one line per operation, no types (all inline).
	require.Len(t, lines, 7+len(s.Ops), d)
	require.True(t, strings.HasPrefix(lines[0], `Evil" / x title base_url: http://attacker.example 1 # injected: yes h…: 17 functions on `+"`api`."), lines[0])
	require.Contains(t, d, `e.g. r = await api.a_bcd({"we\"ird'name": "x"})`, "a name Python cannot take as a keyword goes in one dict")
	require.Contains(t, d, "\naBCD({\"we\\\"ird'name\":string,\"a&b=c#d\"?:string}) // quote \" backtick end / alert(1) new line ls ps\n")
	require.Contains(t, d, "\nalert1({body?:{\"</script>\"?:string,\"x\\ny\"?:\"\\u2028\"|\"\\\"\"|\"`\"|\"*/\"}}) // line1 line2 line3 end\n")
}

func TestHostileProfileInjectsNothing(t *testing.T) {
	s := loadStore(t, "testdata/hostile.yaml")
	p, err := s.Profile(ProfileOptions{Name: "hostile", Preamble: "hostile.preamble.js"})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(p, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"base_url", "budget", "credential", "preamble", "routes"}, keys)
	require.Equal(t, "https://evil.example.com/v1", m["base_url"])
	for _, line := range strings.Split(string(p), "\n") {
		for i := 0; i < len(line); i++ {
			require.True(t, line[i] >= 0x20 && line[i] < 0x7f, "profile line %q", line)
		}
	}
}
