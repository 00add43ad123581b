package apigen

import (
	"html"
	"strings"
)

// plainText turns document prose (CommonMark with inline HTML, as real documents write it:
// Stripe's "<p>Retrieves the <code>Customer</code>.</p>", GitHub's "[links](/rest/...)" and
// "**Note**") into plain text for one line: tags are removed (a block-level tag becomes a
// space), character references are decoded, Markdown links keep their text, emphasis and code
// marks are dropped. It never fails; what it does not recognise is kept as text.
func plainText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<':
			if end := tagEnd(s, i); end > 0 {
				b.WriteByte(' ')
				i = end
				continue
			}
		case c == '[':
			// [text](target) keeps text; [text] alone stays as it is.
			if close := strings.IndexByte(s[i+1:], ']'); close >= 0 && !strings.ContainsAny(s[i+1:i+1+close], "[\n") {
				rest := s[i+1+close+1:]
				if strings.HasPrefix(rest, "(") {
					if paren := strings.IndexByte(rest, ')'); paren > 0 && !strings.ContainsAny(rest[:paren], " \n") {
						b.WriteString(s[i+1 : i+1+close])
						i += 1 + close + 1 + paren + 1
						continue
					}
				}
			}
		case c == '*' || c == '`':
			i++
			continue
		case c == '_' && (i+1 < len(s) && s[i+1] == '_'):
			i += 2
			continue
		}
		b.WriteByte(c)
		i++
	}
	return html.UnescapeString(b.String())
}

// tagEnd returns the index just past an HTML tag or comment that starts at s[i] == '<', or -1
// when what follows is not a tag ("a < b", "<3").
func tagEnd(s string, i int) int {
	if strings.HasPrefix(s[i:], "<!--") {
		if end := strings.Index(s[i+4:], "-->"); end >= 0 {
			return i + 4 + end + 3
		}
		return -1
	}
	j := i + 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	if j >= len(s) || !('a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z') {
		return -1
	}
	for k := j; k < len(s); k++ {
		switch s[k] {
		case '>':
			return k + 1
		case '<', '\n':
			if s[k] == '<' {
				return -1
			}
		}
	}
	return -1
}

// prose gives document text as one plain line of at most max runes, cut at a sentence or word
// boundary where one is near: for summaries and descriptions in generated text.
func prose(s string, max int) string {
	t := oneLine(plainText(s), 0)
	if max <= 0 || len([]rune(t)) <= max {
		return t
	}
	r := []rune(t)[:max]
	cut := string(r)
	if i := strings.LastIndex(cut, ". "); i > max/2 {
		return cut[:i+1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}
