package apigen

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

func TestIdent(t *testing.T) {
	for in, want := range map[string]string{
		"getPet":                 "getPet",
		"list-pets":              "listPets",
		"pets.list":              "petsList",
		"Get Pet":                "GetPet",
		"get_pet":                "get_pet",
		"123abc":                 "_123abc",
		"":                       "op",
		"¿¡!":                    "op",
		"delete":                 "delete_",
		"call":                   "call_",
		"get":                    "get_",
		"then":                   "then_",
		"constructor":            "constructor_",
		"__proto__":              "__proto___",
		"await":                  "await_",
		"let":                    "let_",
		"a\u2028b":               "aB",
		"</script>":              "script",
		"$ref":                   "$ref",
		strings.Repeat("a", 100): strings.Repeat("a", 64),
	} {
		got := Ident(in)
		require.Equal(t, want, got, "Ident(%q)", in)
		require.True(t, IsIdent(got), got)
	}
}

func TestNameCollisions(t *testing.T) {
	s, err := Parse(docWith(`  /a:
    get: {operationId: get-pet, responses: {'200': {description: ok}}}
    post: {operationId: getPet, responses: {'200': {description: ok}}}
    put: {operationId: get_pet2, responses: {'200': {description: ok}}}
    delete: {responses: {'200': {description: ok}}}
  /b:
    get: {operationId: deleteA, responses: {'200': {description: ok}}}
  /:
    get: {responses: {'200': {description: ok}}}
`))
	require.NoError(t, err)
	var got []string
	for _, op := range s.Ops {
		got = append(got, op.Method+" "+op.Path+" "+op.Func)
	}
	// Named in path order; operationIds first, so the derived "deleteA" of DELETE /a gives way.
	require.Equal(t, []string{
		"GET / getRoot",
		"GET /a getPet",
		"POST /a getPet2",
		"PUT /a get_pet2",
		"DELETE /a deleteA2",
		"GET /b deleteA",
	}, got)
}

// validInGoja checks that id works as a strict-mode binding and as a property name.
func validInGoja(id string) error {
	_, err := goja.Compile("ident", `"use strict"; var `+id+` = 1; var o = {}; o.`+id+` = function () {}; o.`+id+`();`, true)
	return err
}

func FuzzIdent(f *testing.F) {
	for _, s := range []string{"getPet", "list-pets", "delete", "", "123", "a\u2028b", "</script>", "__proto__", "then", "\xff\xfe", "let", "yield"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		id := Ident(in)
		if !IsIdent(id) {
			t.Fatalf("Ident(%q) = %q is not a safe identifier", in, id)
		}
		if IsReserved(id) {
			t.Fatalf("Ident(%q) = %q is reserved", in, id)
		}
		if err := validInGoja(id); err != nil {
			t.Fatalf("Ident(%q) = %q does not parse: %v", in, id, err)
		}
	})
}

func TestJSString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:        `"plain"`,
		`a"b`:          `"a\"b"`,
		`a\b`:          `"a\\b"`,
		"</script>":    `"\u003C/script\u003E"`,
		"a\nb\r\tc":    `"a\nb\r\tc"`,
		"\u2028\u2029": `"\u2028\u2029"`,
		"é😀":           `"\u00E9\uD83D\uDE00"`,
		"\x00\x7f":     `"\u0000\u007F"`,
		"\xff":         `"\uFFFD"`,
		"`${x}`":       "\"`${x}`\"",
	} {
		require.Equal(t, want, JSString(in), "JSString(%q)", in)
	}
}

func FuzzJSString(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b'c` + "`d", "\\", "</script>", "*/", "\u2028\u2029", "é😀", "\x00\n\r", "\xff\xfe", "\ud7ff"} {
		f.Add(s)
	}
	vm := goja.New()
	f.Fuzz(func(t *testing.T, in string) {
		lit := JSString(in)
		for i := 0; i < len(lit); i++ {
			if lit[i] < 0x20 || lit[i] >= 0x7f {
				t.Fatalf("JSString(%q) has byte %#x", in, lit[i])
			}
		}
		v, err := vm.RunString(lit)
		if err != nil {
			t.Fatalf("JSString(%q) = %s does not parse: %v", in, lit, err)
		}
		want := string([]rune(in)) // invalid UTF-8 reads as U+FFFD, one per bad byte
		if got := v.Export().(string); got != want {
			t.Fatalf("JSString(%q) = %s reads back as %q", in, lit, got)
		}
		if !utf8.ValidString(want) {
			t.Fatal("unreachable")
		}
	})
}
