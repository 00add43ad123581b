package host_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// TestSecurityCredentialInAHeaderNameAnyCase: the transport canonicalises header names, so a
// credential echoed in a name comes back in another case. It is redacted all the same.
func TestSecurityCredentialInAHeaderNameAnyCase(t *testing.T) {
	const mixed = "sk-Live-Mixed7Q"
	rt, err := host.New(context.Background(), host.Options{CacheDir: secCacheDir(), Getenv: func(string) string { return mixed }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	up := newRecorder(t)
	defer up.Close()
	p := secProfile(t, up.URL(), nil)

	res := runJS(context.Background(), rt, p, `return JSON.stringify(await api.get("/fault/echo"));`)

	require.NoError(t, res.Err)
	require.Equal(t, []string{"Token " + mixed}, up.requests()[0].Header.Values(secCredHeader))
	trace, err := json.Marshal(res.Trace)
	require.NoError(t, err)
	for where, text := range map[string]string{"output": string(res.Output), "log": string(res.Log), "trace": string(trace)} {
		require.NotContains(t, strings.ToLower(text), strings.ToLower(mixed), where)
	}
	require.Contains(t, string(res.Output), `x-[redacted]`)
}

// redactSecret is a credential with the characters the encodings treat specially: '/', '+', '=',
// a space, a quote, a backslash, '&', '<' and a non-ASCII letter.
const redactSecret = `sk-test/abc+def=1 "q\z&<é`

// echoForms encode the credential header's value ("Token " + the secret) as an honest echo
// might: each form is one way an upstream reflects what it was sent (issue 9, class 5).
var echoForms = map[string]func(string) string{
	"raw":  func(s string) string { return s },
	"json": func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) },
	"json-slash": func(s string) string {
		b, _ := json.Marshal(s)
		return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
	},
	"json-u-plus":    func(s string) string { return strings.ReplaceAll(jsonInner(s), "+", `\u002b`) },
	"json-u-all":     func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf(`\u%04x`, r) }) },
	"json-u-upper":   func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf(`\u%04X`, r) }) },
	"json-u-mixed":   func(s string) string { return alternate(s, func(r rune) string { return fmt.Sprintf(`\u%04x`, r) }) },
	"go-quote":       func(s string) string { q := strconv.Quote(s); return q[1 : len(q)-1] },
	"go-quote-ascii": func(s string) string { q := strconv.QuoteToASCII(s); return q[1 : len(q)-1] },
	"query-escape":   url.QueryEscape,
	"path-escape":    url.PathEscape,
	"pct-all-upper":  func(s string) string { return eachByte(s, "%%%02X") },
	"pct-all-lower":  func(s string) string { return eachByte(s, "%%%02x") },
	"html-escape":    html.EscapeString,
	"html-decimal":   func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf("&#%d;", r) }) },
	"html-hex":       func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf("&#x%X;", r) }) },
	"hex":            func(s string) string { return hex.EncodeToString([]byte(s)) },
	"hex-upper":      func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
}

func init() {
	for name, enc := range map[string]*base64.Encoding{"b64": base64.StdEncoding, "b64url": base64.URLEncoding,
		"b64raw": base64.RawStdEncoding, "b64rawurl": base64.RawURLEncoding} {
		for lead := range 3 { // the secret at each alignment within a 3-byte group
			echoForms[fmt.Sprintf("%s-%d", name, lead)] = func(s string) string {
				return enc.EncodeToString([]byte(strings.Repeat("~", lead) + s))
			}
		}
	}
}

func jsonInner(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }

func eachRune(s string, f func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(f(r))
	}
	return b.String()
}

func alternate(s string, f func(rune) string) string {
	var b strings.Builder
	for i, r := range []rune(s) {
		if i%2 == 0 {
			b.WriteString(f(r))
		} else {
			b.WriteString(jsonInner(string(r)))
		}
	}
	return b.String()
}

func eachByte(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// TestSecurityRedactionEncodings: an upstream echoes the credential in each form, in the body,
// in a header value and in a Location; the guest sees [redacted] in its place, and no decoding
// of what it sees gives back three bytes of the secret in a row.
func TestSecurityRedactionEncodings(t *testing.T) {
	rt, err := host.New(context.Background(), host.Options{CacheDir: secCacheDir(), Getenv: func(string) string { return redactSecret }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := echoForms[strings.TrimPrefix(r.URL.Path, "/v1/fault/")]
		v := enc(r.Header.Get(secCredHeader))
		w.Header().Set("X-Echo", v)
		w.Header().Set("Location", "http://127.0.0.1/cb?k="+v)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "<"+v+">")
	}))
	defer up.Close()
	p := secProfile(t, up.URL, nil)
	names := make([]string, 0, len(echoForms))
	for name := range echoForms {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			res := runJS(context.Background(), rt, p, fmt.Sprintf(`const r = await api.get("/fault/%s");
				return [r.body, r.headers["x-echo"], r.headers["location"]].join("\n");`, name))
			require.NoError(t, res.Err)
			require.Equal(t, fwd1, res.Audit.Counters)
			requireAuditAndTrace(t, res)
			var seen string
			require.NoError(t, json.Unmarshal(res.Output, &seen))
			require.Contains(t, seen, broker.Redacted, "the echo is redacted")
			for _, text := range append([]string{seen, string(res.Log)}, decodings(seen)...) {
				for i := 0; i+3 <= len(redactSecret); i++ {
					require.NotContains(t, text, redactSecret[i:i+3], "what the guest saw gives back part of the secret: %q", seen)
				}
			}
		})
	}
}

// decodings decodes what the guest saw every way the forms encode, piece by piece around each
// [redacted]; a piece that does not decode is skipped.
func decodings(seen string) []string {
	var out []string
	for _, piece := range strings.FieldsFunc(seen, func(r rune) bool { return strings.ContainsRune("<>\n=?", r) }) {
		for _, part := range strings.Split(piece, broker.Redacted) {
			if s, err := strconv.Unquote(`"` + part + `"`); err == nil {
				out = append(out, s)
			}
			var js string
			if json.Unmarshal([]byte(`"`+part+`"`), &js) == nil {
				out = append(out, js)
			}
			if s, err := url.QueryUnescape(part); err == nil {
				out = append(out, s)
			}
			out = append(out, html.UnescapeString(part))
			if b, err := hex.DecodeString(part[:len(part)&^1]); err == nil {
				out = append(out, string(b))
			}
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				for skip := range 4 { // the piece may start anywhere in a 4-character group
					if skip < len(part) {
						rest := part[skip:]
						b, _ := enc.DecodeString(rest[:len(rest)/4*4])
						out = append(out, string(b))
					}
				}
			}
		}
	}
	return out
}
