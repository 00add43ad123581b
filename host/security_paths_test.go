package host_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/plimsoll/plimsoll/broker"
)

// Paths: the broker never cleans a path; anything not canonical is refused, and the bytes
// matched are the bytes sent.
var pathCases = []secCase{
	{class: paths, name: "dot-dot segment", js: get("/pets/../admin"), want: `400 invalid | has a ".." segment`, calls: invalid},
	{class: paths, name: "dot segment", js: get("/pets/./1"), want: `400 invalid | has a "." segment`, calls: invalid},
	{class: paths, name: "trailing dot-dot", js: get("/pets/1/.."), want: `400 invalid | has a ".." segment`, calls: invalid},
	{class: paths, name: "encoded dot-dot %2e%2e", js: get("/pets/%2e%2e/admin"), want: `400 invalid | encoded '.' (%2E)`, calls: invalid},
	{class: paths, name: "mixed .%2E", js: get("/pets/.%2E/admin"), want: `400 invalid | encoded '.' (%2E)`, calls: invalid},
	{class: paths, name: "double-encoded %252e", js: get("/pets/%252e%252e/admin"), want: `400 invalid | encoded '%' (%25)`, calls: invalid},
	{class: paths, name: "encoded slash %2f", js: get("/pets/1%2f..%2fadmin"), want: `400 invalid | encoded '/' (%2F)`, calls: invalid},
	{class: paths, name: "encoded backslash %5c", js: get("/pets/1%5C..%5Cadmin"), want: `400 invalid | encoded '\' (%5C)`, calls: invalid},
	{class: paths, name: "backslash", js: get(`/pets/1\..\admin`), want: `400 invalid | contains '\\'`, calls: invalid},
	{class: paths, name: "leading double slash", js: get("//pets/1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "inner double slash", js: get("/pets//1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "dot-dot-semicolon", js: get("/pets/..;/admin"), want: `400 invalid | contains ';'`, calls: invalid},
	{class: paths, name: "semicolon parameter", js: get("/pets/1;jsessionid=abc"), want: `400 invalid | contains ';'`, calls: invalid},
	{class: paths, name: "question mark inside the path field", js: rawJS(`{"method":"GET","path":"/pets/1?x=/../admin"}`), want: `400 invalid | contains '?'`, calls: invalid},
	{class: paths, name: "question mark split off by the preamble", js: get("/pets/1?next=..%2Fadmin"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1?next=..%2Fadmin"},
	{class: paths, name: "hash inside the path", js: get("/pets/1#/../admin"), want: `400 invalid | contains '#'`, calls: invalid},
	{class: paths, name: "non-ASCII", js: get("/pets/é"), want: `400 invalid | is not ASCII`, calls: invalid},
	{class: paths, name: "fullwidth dots", js: get("/pets/\uff0e\uff0e/admin"), want: `400 invalid | is not ASCII`, calls: invalid},
	{class: paths, name: "percent-encoded overlong dots", js: get("/pets/%c0%ae%c0%ae"), want: `400 invalid | do not decode to valid UTF-8`, calls: invalid},
	{class: paths, name: "percent-encoded 3-byte overlong dot", js: get("/pets/%e0%80%ae"), want: `400 invalid | do not decode to valid UTF-8`, calls: invalid},
	{class: paths, name: "percent-encoded fullwidth dots", js: get("/pets/%EF%BC%8E%EF%BC%8E"), want: `400 invalid | contains an encoded U+FF0E`, calls: invalid},
	{class: paths, name: "percent-encoded fullwidth solidus", js: get("/pets/1%ef%bc%8fadmin"), want: `400 invalid | contains an encoded U+FF0F`, calls: invalid},
	{class: paths, name: "percent-encoded non-ASCII letter is data", js: get("/pets/Jos%C3%A9"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/Jos%C3%A9"},
	{class: paths, name: "raw overlong bytes", cmd: goCallBytes([]byte("{\"method\":\"GET\",\"path\":\"/pets/\xc0\xae\xc0\xae\"}")), want: `400 invalid | not valid UTF-8`, calls: invalid},
	{class: paths, name: "NUL", js: get("/pets/1\x00"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "CR LF", js: get("/pets/1\r\nHost: evil.test"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "TAB", js: get("/pets/\t1"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "space", js: get("/pets/a b"), want: `400 invalid | whitespace`, calls: invalid},
	{class: paths, name: "empty", js: get(""), want: `400 invalid | path is empty`, calls: invalid},
	{class: paths, name: "no leading slash", js: get("pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "very long", js: `return show(await api.get("/pets/" + "a".repeat(3000)));`, want: `400 invalid | over the 2048-byte cap`, calls: invalid},
	{class: paths, name: "many segments", js: `return show(await api.get("/pets" + "/x".repeat(1000)));`, want: `403 denied | no granted route matches GET /pets/x/x`, calls: denied},
	{class: paths, name: "full URL", js: get("http://evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "full URL of the upstream itself", js: get("http://127.0.0.1/v1/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "scheme-relative", js: get("//evil.test/pets/1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "@host", js: get("@evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "@host inside a segment stays a path", js: get("/pets/1@evil.test"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1@evil.test"},
	{class: paths, name: ".host", js: get(".evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: ":port", js: get(":8080/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: ":port inside a segment stays a path", js: get("/pets/1:8080"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1:8080"},
	{class: paths, name: "upper-case route", js: get("/PETS/1"), want: `403 denied | no granted route matches GET /PETS/1`, calls: denied},
	{class: paths, name: "mixed-case route", js: get("/Pets/1"), want: `403 denied | no granted route matches GET /Pets/1`, calls: denied},
	{class: paths, name: "star against an empty last segment", js: get("/pets/"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "star against an empty inner segment", js: get("/pets//toys"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "star against two segments", js: get("/pets/1/2"), want: `403 denied`, calls: denied},
	{class: paths, name: "inner star against two segments", js: get("/pets/1/2/toys"), want: `403 denied`, calls: denied},
	{class: paths, name: "escapes are sent as given", js: get("/pets/a%20b%3Fc%23d"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/a%20b%3Fc%23d"},
	{class: paths, name: "stray percent", js: get("/pets/100%"), want: `400 invalid | does not start a %XX escape`, calls: invalid},

	// Issue 9, class 7: an escape may encode a non-ASCII letter or digit, nothing else. Servers
	// that fold characters by "best fit" turn symbols and punctuation into separators and dots.
	{class: paths, name: "encoded DIVISION SLASH U+2215", js: get("/pets/x%E2%88%95..%E2%88%95admin"), want: `400 invalid | contains an encoded U+2215, which is not a letter or a digit`, calls: invalid},
	{class: paths, name: "encoded FRACTION SLASH U+2044", js: get("/pets/x%E2%81%84..%E2%81%84admin"), want: `400 invalid | contains an encoded U+2044`, calls: invalid},
	{class: paths, name: "encoded REVERSE SOLIDUS OPERATOR U+29F5", js: get("/pets/x%E2%A7%B5..%E2%A7%B5admin"), want: `400 invalid | contains an encoded U+29F5`, calls: invalid},
	{class: paths, name: "encoded BIG SOLIDUS U+29F8", js: get("/pets/x%E2%A7%B8admin"), want: `400 invalid | contains an encoded U+29F8`, calls: invalid},
	{class: paths, name: "encoded SET MINUS U+2216", js: get("/pets/x%E2%88%96admin"), want: `400 invalid | contains an encoded U+2216`, calls: invalid},
	{class: paths, name: "encoded YEN SIGN U+00A5 (a backslash in Shift-JIS)", js: get("/pets/x%C2%A5..%C2%A5admin"), want: `400 invalid | contains an encoded U+00A5`, calls: invalid},
	{class: paths, name: "encoded WON SIGN U+20A9 (a backslash in Korean code pages)", js: get("/pets/x%E2%82%A9admin"), want: `400 invalid | contains an encoded U+20A9`, calls: invalid},
	{class: paths, name: "encoded IDEOGRAPHIC FULL STOP U+3002", js: get("/pets/%E3%80%82%E3%80%82"), want: `400 invalid | contains an encoded U+3002`, calls: invalid},
	{class: paths, name: "encoded HALFWIDTH IDEOGRAPHIC FULL STOP U+FF61", js: get("/pets/%EF%BD%A1%EF%BD%A1"), want: `400 invalid | contains an encoded U+FF61`, calls: invalid},
	{class: paths, name: "encoded MIDDLE DOT U+00B7", js: get("/pets/%C2%B7%C2%B7"), want: `400 invalid | contains an encoded U+00B7`, calls: invalid},
	{class: paths, name: "encoded MODIFIER LETTER APOSTROPHE U+02BC", js: get("/pets/a%CA%BCb"), want: `400 invalid | contains an encoded U+02BC`, calls: invalid},
	{class: paths, name: "encoded COMBINING LONG SOLIDUS OVERLAY U+0338", js: get("/pets/a%CC%B8b"), want: `400 invalid | contains an encoded U+0338`, calls: invalid},
	{class: paths, name: "encoded NO-BREAK SPACE U+00A0", js: get("/pets/a%C2%A0b"), want: `400 invalid | contains an encoded U+00A0`, calls: invalid},
	{class: paths, name: "encoded ZERO WIDTH SPACE U+200B", js: get("/pets/a%E2%80%8Bb"), want: `400 invalid | contains an encoded U+200B`, calls: invalid},
	{class: paths, name: "encoded FULLWIDTH QUESTION MARK U+FF1F", js: get("/pets/a%EF%BC%9Fb"), want: `400 invalid | contains an encoded U+FF1F`, calls: invalid},
	{class: paths, name: "encoded FULLWIDTH SEMICOLON U+FF1B", js: get("/pets/a%EF%BC%9Bb"), want: `400 invalid | contains an encoded U+FF1B`, calls: invalid},
	{class: paths, name: "encoded private-use character", js: get("/pets/a%EE%80%80b"), want: `400 invalid | contains an encoded U+E000`, calls: invalid},
	{class: paths, name: "encoded CJK letters are data", js: get("/pets/%E7%8C%AB"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/%E7%8C%AB"},
	{class: paths, name: "encoded Arabic-Indic digits are data", js: get("/pets/%D9%A1%D9%A2"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/%D9%A1%D9%A2"},
}

func TestSecurityPaths(t *testing.T) { runSecCases(t, pathCases) }

// TestSecurityPathFolding checks the broker's list of encoded characters that fold into a
// delimiter against Unicode's own NFKC tables, that every other encoded non-ASCII character is
// refused unless it is a letter or a digit, and that every overlong or surrogate encoding is
// refused. It calls broker.CheckPath directly: the end-to-end cases above show the same rule at
// work in a run.
func TestSecurityPathFolding(t *testing.T) {
	encode := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	refused := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if norm.NFKC.IsNormalString(s) && r%101 != 0 {
			continue // NFKC leaves it alone, so it cannot fold into anything; check a sample
		}
		folds := strings.ContainsAny(norm.NFKC.String(s), `./\%`)
		err := broker.CheckPath("/pets/" + encode(s))
		word := (unicode.IsLetter(r) && !unicode.Is(unicode.Lm, r)) || unicode.Is(unicode.Nd, r)
		switch {
		case folds:
			require.Error(t, err, "U+%04X folds to %q", r, norm.NFKC.String(s))
			refused++
		case !word: // issue 9, class 7: best-fit folding has no complete table
			require.Error(t, err, "U+%04X is neither a letter nor a digit", r)
		default:
			require.NoError(t, err, "U+%04X", r)
		}
	}
	require.Equal(t, 40, refused)

	// Overlong encodings of any ASCII byte, and encoded UTF-16 surrogates.
	for c := 0; c < 0x80; c++ {
		for _, seq := range [][]byte{
			{0xC0 | byte(c>>6), 0x80 | byte(c&0x3f)},
			{0xE0, 0x80 | byte(c>>6), 0x80 | byte(c&0x3f)},
			{0xF0, 0x80, 0x80 | byte(c>>6), 0x80 | byte(c&0x3f)},
		} {
			require.Error(t, broker.CheckPath("/pets/"+encode(string(seq))), "%X", seq)
		}
	}
	for hi := 0xA0; hi <= 0xBF; hi++ {
		require.Error(t, broker.CheckPath("/pets/"+encode(string([]byte{0xED, byte(hi), 0x80}))))
	}
}
