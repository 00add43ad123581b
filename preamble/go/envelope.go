package plimsoll

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// encodeRequest renders the ABI request envelope with its keys in a fixed order: method, path,
// query, headers (names sorted), then body or body_base64. Strings are written byte for byte with
// only JSON's required escapes, so text that is not UTF-8 reaches the broker as it is and is
// refused there (invalid), never silently repaired here.
func encodeRequest(r *Request) []byte {
	b := make([]byte, 0, 64+len(r.Path)+len(r.RawQuery)+len(r.Body)*4/3)
	b = append(b, `{"method":`...)
	b = appendString(b, strings.ToUpper(r.Method))
	path, inPath, _ := strings.Cut(r.Path, "?")
	b = append(b, `,"path":`...)
	b = appendString(b, path)
	if q := r.encodedQuery(inPath); q != "" {
		b = append(b, `,"query":`...)
		b = appendString(b, q)
	}
	if len(r.Header) > 0 {
		names := make([]string, 0, len(r.Header))
		for name, vs := range r.Header {
			if len(vs) > 0 {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			b = append(b, `,"headers":{`...)
			for i, name := range names {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, name)
				b = append(b, ':')
				vs := r.Header[name]
				if len(vs) == 1 {
					b = appendString(b, vs[0])
					continue
				}
				b = append(b, '[')
				for j, v := range vs {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendString(b, v)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
	}
	if r.Body != nil {
		if utf8.Valid(r.Body) {
			b = append(b, `,"body":`...)
			b = appendString(b, string(r.Body))
		} else {
			b = append(b, `,"body_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, r.Body)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: '"', '\' and control characters are escaped, every
// other byte is copied.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encodedQuery is the query split off the path, then RawQuery, then Query with names sorted and
// values in order.
func (r *Request) encodedQuery(inPath string) string {
	var b strings.Builder
	for _, raw := range []string{inPath, r.RawQuery} {
		if raw == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(raw)
	}
	names := make([]string, 0, len(r.Query))
	for name := range r.Query {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range r.Query[name] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(EscapeQueryComponent(name))
			b.WriteByte('=')
			b.WriteString(EscapeQueryComponent(v))
		}
	}
	return b.String()
}

// EscapeQueryComponent percent-encodes every byte of s except RFC 3986's unreserved characters
// (A–Z a–z 0–9 - . _ ~), with upper-case hex: a space is %20, "é" is %C3%A9. It is what
// JavaScript's encodeURIComponent does, with ! ' ( ) * escaped too.
func EscapeQueryComponent(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&0xf])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// responseEnvelope is the ABI response envelope; exactly one of Body and BodyBase64 is set.
type responseEnvelope struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body"`
	BodyBase64 *string             `json:"body_base64"`
}

var errEnvelope = errors.New("the host's response envelope is malformed")

// decodeResponse parses a response envelope.
func decodeResponse(raw []byte) (*Response, error) {
	var env responseEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", errEnvelope, err)
	}
	resp := &Response{Status: env.Status, Header: make(Header, len(env.Headers))}
	for name, vs := range env.Headers {
		k := CanonicalHeaderKey(name)
		resp.Header[k] = append(resp.Header[k], vs...)
	}
	switch {
	case env.Body != nil && env.BodyBase64 != nil:
		return nil, fmt.Errorf("%w: it has both body and body_base64", errEnvelope)
	case env.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*env.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("%w: body_base64: %v", errEnvelope, err)
		}
		resp.Body = b
	case env.Body != nil:
		resp.Body = []byte(*env.Body)
	default:
		resp.Body = []byte{}
	}
	return resp, nil
}
