package apigen

import (
	"strings"
)

// maxIdentLen caps a generated function name. Longer operationIds are cut; the collision pass
// then keeps cut names apart.
const maxIdentLen = 64

// reservedNames are names a generated function must never take: JavaScript reserved words
// (sloppy and strict mode, including the future-reserved ones), names that strict mode refuses as
// bindings, global values that cannot be meaningfully shadowed, the generic preamble's own
// functions, and properties every object inherits (or that change how `await api` behaves).
var reservedNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		break case catch class const continue debugger default delete do else enum export extends
		false finally for function if import in instanceof new null return super switch this throw
		true try typeof var void while with yield let static implements interface package private
		protected public await arguments eval undefined NaN Infinity
		call get post put patch head options request sleep console input api search describe
		constructor prototype __proto__ hasOwnProperty isPrototypeOf propertyIsEnumerable
		toLocaleString toString valueOf toJSON then
		__defineGetter__ __defineSetter__ __lookupGetter__ __lookupSetter__`) {
		reservedNames[w] = true
	}
}

// IsReserved reports whether name must not be used as a generated function name.
func IsReserved(name string) bool { return reservedNames[name] }

// IsIdent reports whether s is an ASCII JavaScript identifier that is not reserved: what Ident
// always returns.
func IsIdent(s string) bool {
	if s == "" || reservedNames[s] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isIdentByte(c) && !isDigit(c):
		case isDigit(c) && i > 0:
		default:
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '_' || c == '$'
}

// Ident turns any string (an operationId, or a name derived from method and path) into a safe
// JavaScript identifier:
//
//   - runs of ASCII letters, digits, '_' and '$' are kept; anything else separates words, and each
//     word after the first starts upper-case ("list-pets" and "list pets" become "listPets");
//   - a leading digit gets a '_' in front; the result is cut to 64 bytes;
//   - a reserved word gets a '_' after it ("delete" becomes "delete_");
//   - nothing usable at all gives "op".
//
// The result always satisfies IsIdent. Ident does not avoid collisions; the caller does.
func Ident(s string) string {
	id := identWords(s)
	if id == "" {
		id = "op"
	}
	if isDigit(id[0]) {
		id = "_" + id
	}
	if len(id) > maxIdentLen {
		id = id[:maxIdentLen]
	}
	if reservedNames[id] {
		id += "_"
	}
	return id
}

// identWords joins the identifier-character runs of s camel-case; "" when s has none.
func identWords(s string) string {
	var b strings.Builder
	newWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isIdentByte(c) {
			newWord = b.Len() > 0
			continue
		}
		if newWord && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		newWord = false
		b.WriteByte(c)
	}
	return b.String()
}

// nameSet hands out identifiers that have not been handed out before.
type nameSet map[string]bool

// unique returns id, or id with the smallest number from 2 up appended that is still free.
func (ns nameSet) unique(id string) string {
	if !ns[id] {
		ns[id] = true
		return id
	}
	base := id
	if len(base) > maxIdentLen-4 {
		base = base[:maxIdentLen-4]
	}
	for n := 2; ; n++ {
		cand := base + itoa(n)
		if !ns[cand] && !reservedNames[cand] {
			ns[cand] = true
			return cand
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
