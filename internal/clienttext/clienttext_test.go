package clienttext_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/internal/clienttext"
)

func TestBound(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"claude-code", "claude-code"},
		{"a\nb", `a\u{000A}b`},
		{"\x1b[31mred", `\u{001B}[31mred`},
		{"rtl\u202Eevil", `rtl\u{202E}evil`},
		{"bad\xffbyte", `bad\x{FF}byte`},
		{"del\x7f", `del\u{007F}`},
		{strings.Repeat("x", 16), strings.Repeat("x", 16)},
		{strings.Repeat("x", 17), "xxxxxxxx…[cut]"},
		{strings.Repeat("é", 9), "éééé…[cut]"}, // 18 bytes: cut between runes, never inside one
		{"\n\n\n\n", `\u{000A}…[cut]`},
	} {
		if got := clienttext.Bound(tc.in, 16); got != tc.want {
			t.Errorf("Bound(%q, 16) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNameOfTwoMegabytes(t *testing.T) {
	got := clienttext.Name(strings.Repeat("A\x00", 1<<20))
	if len(got) > clienttext.MaxName || !strings.HasSuffix(got, "…[cut]") {
		t.Fatalf("%d bytes: %q", len(got), got)
	}
}

func ExampleName() {
	fmt.Println(clienttext.Name("my-agent\r\nforged: line"))
	// Output: my-agent\u{000D}\u{000A}forged: line
}

func FuzzBound(f *testing.F) {
	for _, s := range []string{"", "name", "a\nb", "\xff\xfe", "é\u202E", strings.Repeat("\x00", 40)} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = 16 + max&0xff
		got := clienttext.Bound(s, max)
		if len(got) > max {
			t.Fatalf("Bound(%q, %d) is %d bytes", s, max, len(got))
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\x00\n\r\x1b\x7f\u2028\u202e") {
			t.Fatalf("Bound(%q, %d) = %q: not clean", s, max, got)
		}
		if len(s) <= max && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f }) && got != s {
			t.Fatalf("Bound(%q, %d) = %q: a short clean ASCII string changed", s, max, got)
		}
	})
}

func TestErrorLeavesC0ToJSON(t *testing.T) {
	got := clienttext.Error("line\nbreak \x1b[2J del\x7f c1\u009b rtl\u202e")
	if want := "line\nbreak \x1b[2J del\\u{007F} c1\\u{009B} rtl\\u{202E}"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
