package broker

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// CallHash is the sha256, in hex, of exactly what a gated call sends: its method, its path with
// the query, the tool's headers (HeaderLines) and its body, each preceded by its length so no two
// calls share an encoding. An approval answers the call whose hash it names; a changed byte, in a
// header too, is a new approval. The broker's credential is not the tool's and is not in it.
func CallHash(method, path, query string, h http.Header, body []byte) string {
	hash := sha256.New()
	target := path
	if query != "" {
		target += "?" + query
	}
	headers := strings.Join(HeaderLines(h), "\n")
	for _, part := range [][]byte{[]byte(method), []byte(target), []byte(headers), body} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		hash.Write(n[:])
		hash.Write(part)
	}
	return hex.EncodeToString(hash.Sum(nil))
}

// HeaderLines are a call's headers as a person reads them: "Name: value", names sorted, a name's
// values in the order they are sent, unprintable runes and '\' escaped as in a body's summary.
// A header can change what a body means (Content-Type) or what a call does (If-Match), so an
// approval shows and binds them.
func HeaderLines(h http.Header) []string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var lines []string
	for _, name := range names {
		for _, v := range h[name] {
			lines = append(lines, escapeText(name+": "+v, true))
		}
	}
	return lines
}

// MaxSummaryBytes caps a body summary; a longer one ends with its full size, and the hash
// still covers the whole body.
const MaxSummaryBytes = 4096

// SummarizeBody renders a body for a person to judge: JSON in one canonical form (keys sorted,
// no insignificant space, so two encodings of one value read the same), other UTF-8 text as it
// is, anything else by its size. Every rune a terminal or a form could hide or act on (controls,
// DEL, C1, bidi and other format characters) is written as a \u escape, and so is '\' in text,
// so what is shown is what is sent.
func SummarizeBody(body []byte) string {
	var s string
	switch {
	case len(body) == 0:
		return "(no body)"
	case json.Valid(body):
		if key, twice := repeatedKey(body); twice {
			s = `(JSON with the key "` + escapeText(key, true) + `" twice in one object, shown as sent) ` +
				escapeText(string(bytes.TrimSpace(body)), true)
			break
		}
		s = canonicalJSON(body)
	case utf8.Valid(body):
		s = escapeText(string(body), true)
	default:
		return fmt.Sprintf("(%d bytes, not text)", len(body))
	}
	if len(s) > MaxSummaryBytes {
		s = capText(s, MaxSummaryBytes) + fmt.Sprintf(" (%d bytes in all)", len(s))
	}
	return s
}

func canonicalJSON(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers as written, not rounded through float64
	var v any
	if dec.Decode(&v) != nil {
		return escapeText(string(body), true)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return escapeText(string(body), true)
	}
	// Inside JSON strings a '\' is already escaped, so only unprintable runes need it.
	return escapeText(strings.TrimSuffix(buf.String(), "\n"), false)
}

// repeatedKey finds a key that stands twice in one object of a valid JSON body. Parsers differ
// on which value they keep, and the canonical form keeps only the last: such a body is shown as
// sent instead.
func repeatedKey(body []byte) (string, bool) {
	type level struct {
		keys    map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*level
	valueEnded := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // the end of the body
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueEnded()
				continue
			}
			key, _ := tok.(string)
			if stack[n-1].keys[key] {
				return key, true
			}
			stack[n-1].keys[key], stack[n-1].wantKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueEnded()
		default:
			valueEnded()
		}
	}
}

// escapeText writes unprintable runes (and, for text, '\') as \u escapes; invalid UTF-8 bytes
// come out as \ufffd.
func escapeText(s string, backslash bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c == '\\' && backslash:
			b.WriteString(`\\`)
		case c == ' ' || (unicode.IsPrint(c) && c != utf8.RuneError):
			b.WriteRune(c)
		case c > 0xFFFF:
			r1, r2 := utf16.EncodeRune(c)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}
