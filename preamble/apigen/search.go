package apigen

import (
	"regexp"
	"sort"
	"strings"
)

// Search words. api.search runs in the sandbox, but the index it searches is built here: each
// operation's line carries its words already split, lower-cased, made singular and made one
// with their synonyms, so a run pays nothing to tokenise 1,000 operations. The query is split
// in the sandbox by the same rules (runtime.js words), from the same tables (written into the
// preamble from stopWords and canonWords), and FuzzSearchWords holds the two to the same
// answer.

// stopWords carry no meaning in a query or a summary.
const stopWords = "a an the of for to in on by with and or from into as at is are be our your its " +
	"their any some every this that these those i we you it how do does can please using via"

// canonWords are synonyms, written "word=canonical": a query's word and a document's word meet
// in the canonical one.
const canonWords = "add=create new=create make=create post=create " +
	"remove=delete destroy=delete del=delete erase=delete " +
	"edit=update modify=update change=update patch=update set=update put=update " +
	"fetch=get retrieve=get show=get read=get view=get obtain=get " +
	"enumerate=list browse=list " +
	"repository=repo pr=pull prs=pull org=organization orgs=organization organisation=organization " +
	"me=authenticated mine=authenticated my=authenticated"

var (
	stopSet  = map[string]bool{}
	canonMap = map[string]string{}

	camelLower = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	camelUpper = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
)

func init() {
	for _, w := range strings.Fields(stopWords) {
		stopSet[w] = true
	}
	for _, kv := range strings.Fields(canonWords) {
		k, v, _ := strings.Cut(kv, "=")
		canonMap[k] = v
	}
}

// searchWords splits text into canonical search words: camelCase and snake_case apart, ASCII
// letters and digits only, lower case, no stop words, plurals made singular, synonyms made one.
// runtime.js words() is the same function.
func searchWords(text string) []string {
	s := camelLower.ReplaceAllString(text, "${1} ${2}")
	s = camelUpper.ReplaceAllString(s, "${1} ${2}")
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		w = strings.ToLower(w)
		if stopSet[w] {
			continue
		}
		if c, ok := canonMap[w]; ok {
			w = c
		}
		w = stem(w)
		if c, ok := canonMap[w]; ok {
			w = c
		}
		out = append(out, w)
	}
	return out
}

// stem reduces an English plural to its singular, as far as a short rule can.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") ||
		strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// verbWord is the word a method stands for.
var verbWord = map[string]string{"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update",
	"PATCH": "update", "DELETE": "delete", "OPTIONS": "options"}

// Search fields, best first, and the bit each sets in a posting's mask.
const (
	fieldName    = 1 << iota // the function's name
	fieldSummary             // the summary
	fieldPath                // the path's literal text
	fieldGroup               // the resource group
	fieldVerb                // the method's verb; a GET of a collection is also "list"
)

// opFields maps each of an operation's search words to the fields it appears in, and counts
// the distinct words of its name and its summary (api.search measures how much of each a
// query covers).
func opFields(op *Operation) (masks map[string]int, nameWords, sumWords int) {
	masks = map[string]int{}
	add := func(words []string, bit int) int {
		n := 0
		for _, w := range words {
			if masks[w]&bit == 0 {
				n++
			}
			masks[w] |= bit
		}
		return n
	}
	nameWords = add(searchWords(op.Func), fieldName)
	sumWords = add(searchWords(op.Summary), fieldSummary)
	add(searchWords(literalPath(op.Path)), fieldPath)
	add(searchWords(op.Group), fieldGroup)
	verbs := []string{verbWord[op.Method]}
	if op.Method == "GET" && !strings.HasSuffix(op.Path, "}") {
		verbs = append(verbs, "list")
	}
	add(verbs, fieldVerb)
	return masks, nameWords, sumWords
}

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// b36 writes n in base 36 in exactly width digits.
func b36(n, width int) string {
	buf := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		buf[i] = base36[n%36]
		n /= 36
	}
	return string(buf)
}

// searchIndex is the inverted index api.search reads: for each word, sorted, one line
// "word\tPPP..." where each posting is an operation's position in the name-sorted table
// (width base-36 digits) and one base-36 digit of field bits; and per operation two base-36
// digits, its name's and its summary's word counts (at most 35).
func searchIndex(ops []*Operation) (postings, counts string, width int) {
	width = 1
	for n := 36; n < len(ops); n *= 36 {
		width++
	}
	lists := map[string][]string{}
	var c strings.Builder
	for i, op := range ops {
		masks, nw, sw := opFields(op)
		c.WriteByte(base36[min(nw, 35)])
		c.WriteByte(base36[min(sw, 35)])
		for w, m := range masks {
			lists[w] = append(lists[w], b36(i, width)+string(base36[m]))
		}
	}
	words := make([]string, 0, len(lists))
	for w := range lists {
		words = append(words, w)
	}
	sort.Strings(words)
	var b strings.Builder
	b.WriteByte('\n')
	for _, w := range words {
		l := lists[w]
		sort.Strings(l)
		b.WriteString(w + "\t" + strings.Join(l, "") + "\n")
	}
	return b.String(), c.String(), width
}

// literalPath is a path template without its {parameters}.
func literalPath(path string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '{':
			depth++
			b.WriteByte(' ')
		case c == '}' && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SearchWords is searchWords for the clients' agreement tests: the Python client's _words and
// the JavaScript preamble's words must split every text the same way.
func SearchWords(text string) []string { return searchWords(text) }
