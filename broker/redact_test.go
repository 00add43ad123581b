package broker

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzRedact: whatever surrounds an encoded secret, redaction never panics, never leaves the
// secret raw, and leaves text without it untouched.
func FuzzRedact(f *testing.F) {
	for _, seed := range []string{"", "plain", `sk-test/abc+def=1`, `sk-test\/abc\u002bdef=1`, "sk-test%2Fabc%2bdef%3D1",
		"&#115;k-test/abc+def=1", `\u`, "&#x;", "&#99999999;", "%", `\uD83D\uDE00`, "c2stdGVzdC9hYmMrZGVmPTE="} {
		f.Add(seed, "<", ">")
	}
	x := newRedactor("sk-test/abc+def=1")
	f.Fuzz(func(t *testing.T, mid, before, after string) {
		in := []byte(before + mid + after)
		out := x.redact(in, false)
		if bytes.Contains(out, []byte("sk-test/abc+def=1")) && !bytes.Contains(in, []byte(Redacted)) {
			t.Fatalf("the secret survives in %q", out)
		}
		_ = x.redact(in, true)
		clean := strings.ReplaceAll(before+after, "sk-", "")
		if !strings.ContainsAny(clean, `%\&+`) && string(x.redact([]byte(clean), false)) != clean && !containsAnyForm(x, clean) {
			t.Fatalf("text without the secret was changed: %q", clean)
		}
	})
}

func containsAnyForm(x *redactor, s string) bool {
	for _, f := range x.fixed {
		if strings.Contains(s, string(f)) {
			return true
		}
	}
	return false
}

func TestRedactAlignments(t *testing.T) {
	const secret = "0d15ea5e-0c0ffee-5ec7e7-9f00d"
	x := newRedactor(secret)
	for lead := range 3 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			in := enc.EncodeToString([]byte(strings.Repeat("a", lead) + "Token " + secret + "!"))
			if out := string(x.redact([]byte(in), false)); !strings.Contains(out, Redacted) {
				t.Errorf("lead %d: %s not redacted", lead, in)
			}
		}
	}
}

func BenchmarkRedactNoSecret(b *testing.B) {
	x := newRedactor("0d15ea5e-0c0ffee-5ec7e7-9f00d")
	body := bytes.Repeat([]byte(`{"id":42,"name":"Rex","tags":["a\/b","c%20d"]}`), 1<<10) // 47 KiB of JSON
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		x.redact(body, false)
	}
}
