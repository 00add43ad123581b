package apigen

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// wordsVM runs the sandbox's words() (runtime.js) on its own, with the generated tables.
func wordsVM(t testing.TB) func(testing.TB, string) []string {
	vm := goja.New()
	_, err := vm.RunString(fakeGeneric + "var STOP_WORDS = " + JSString(stopWords) + "; var CANON_WORDS = " + JSString(canonWords) + ";\n" +
		"var words = (function (api) {\n" + runtimeJS + "\nreturn words;\n})(api);")
	require.NoError(t, err)
	fn, ok := goja.AssertFunction(vm.Get("words"))
	require.True(t, ok)
	return func(t testing.TB, s string) []string {
		v, err := fn(goja.Undefined(), vm.ToValue(s))
		require.NoError(t, err)
		var out []string
		require.NoError(t, json.Unmarshal([]byte(mustJSON(t, vm, v)), &out))
		return out
	}
}

func mustJSON(t testing.TB, vm *goja.Runtime, v goja.Value) string {
	b, err := json.Marshal(v.Export())
	require.NoError(t, err)
	return string(b)
}

func TestSearchWords(t *testing.T) {
	js := wordsVM(t)
	for in, want := range map[string]string{
		"Create an issue":   "create issue",
		"issuesListForRepo": "issue list repo",
		"List repositories for the authenticated user": "list repo authenticated user",
		"GetCustomersCustomerTaxIds":                   "get customer customer tax ids",
		"add-labels_to prs":                            "create label pull",
		"HTMLParser v2 über":                           "html parser v2 ber",
		"Retrieves the details of an account.":         "get detail account",
		"":                                             "",
	} {
		got := searchWords(in)
		require.Equal(t, want, strings.Join(got, " "), in)
		require.Equal(t, got, nilIfEmpty(js(t, in)), "JS words(%q)", in)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// FuzzSearchWords holds the sandbox's query tokenizer (runtime.js words) to the one that built
// the index (searchWords): a query word can only meet an index word if both split alike.
func FuzzSearchWords(f *testing.F) {
	for _, s := range []string{"create an issue", "reposGetContent", "HTTPServerError", "a_b-c d", "ÄÖÜ straße", "\x00\xff", "ies sses xes", "mySQLDatabases"} {
		f.Add(s)
	}
	js := wordsVM(f)
	f.Fuzz(func(t *testing.T, s string) {
		got := searchWords(s)
		require.Equal(t, got, nilIfEmpty(js(t, s)), "%q", s)
		for _, w := range got {
			require.NotEmpty(t, w)
			require.Equal(t, strings.ToLower(w), w)
			require.False(t, stopSet[w], w)
			require.NotContains(t, w, " ")
		}
	})
}

// FuzzProse: document prose becomes one printable line, never longer than asked, whatever HTML
// or Markdown it holds; text without markup stays as it is.
func FuzzProse(f *testing.F) {
	for _, s := range []string{"<p>Retrieves the <code>Customer</code>.</p>", "[link](/x) **bold** `code`", "a < b > c", "<!-- x -->y",
		"&amp;&lt;script&gt;", "<a href=\"x\">t</a", "line1\nline2\u2028", strings.Repeat("word ", 80)} {
		f.Add(s, 60)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 2 || max > 400 {
			max = 60
		}
		out := prose(s, max)
		require.True(t, utf8.ValidString(out) || !utf8.ValidString(s), "%q", out)
		require.LessOrEqual(t, utf8.RuneCountInString(out), max+1)
		require.NotContains(t, out, "\n")
		require.NotContains(t, out, "\r")
		require.NotContains(t, out, "\u2028")
		require.NotContains(t, out, "\u2029")
		if !strings.ContainsAny(s, "<>[]*`_&") && utf8.ValidString(s) && s == oneLine(s, 0) && utf8.RuneCountInString(s) <= max {
			require.Equal(t, s, out)
		}
	})
}
