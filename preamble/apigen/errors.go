package apigen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinels for errors.Is. Each typed error below matches one of them.
var (
	// ErrInvalidDocument matches a *DocumentError: the document could not be read as an
	// OpenAPI 3.x document plimsoll can use.
	ErrInvalidDocument = errors.New("specgen: invalid OpenAPI document")
	// ErrHealthTag matches a *HealthTagError: x-plimsoll-health-check is on the wrong operation,
	// or on more than one.
	ErrHealthTag = errors.New("specgen: invalid x-plimsoll-health-check")
)

// DocumentError says why a document was refused. Err, when set, is the OpenAPI library's own
// error (for example *openapi3.DisallowedExternalRefError) and is reachable with errors.As.
type DocumentError struct {
	Source string // the document's file name, or "" when parsed from bytes
	Reason string // what is wrong, in words
	Err    error  // the underlying error, if any
}

func (e *DocumentError) Error() string {
	var b strings.Builder
	b.WriteString("specgen: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *DocumentError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidDocument) true.
func (e *DocumentError) Is(target error) bool { return target == ErrInvalidDocument }

// HealthProblem says what is wrong with a tagged health operation.
type HealthProblem int

const (
	HealthNotGET       HealthProblem = iota + 1 // the tagged operation is not a GET
	HealthPathParams                            // its path has a {parameter}
	HealthMultiple                              // more than one operation is tagged
	HealthNotBool                               // the tag's value is not true or false
	HealthNotCanonical                          // its path is not one the broker would accept
)

// OpRef names one operation as the document writes it: method and path template.
type OpRef struct {
	Method string // upper case
	Path   string // e.g. /pets/{petId}
}

// String gives "METHOD /path"; a path with anything but printable ASCII is quoted Go-style, so a
// hostile path cannot break an error message across lines.
func (o OpRef) String() string {
	for i := 0; i < len(o.Path); i++ {
		if o.Path[i] < 0x20 || o.Path[i] >= 0x7f {
			return o.Method + " " + strconv.Quote(o.Path)
		}
	}
	return o.Method + " " + o.Path
}

// HealthTagError is returned when x-plimsoll-health-check cannot become a health_check line.
// Ops names every operation involved; Problem says what is wrong.
type HealthTagError struct {
	Problem HealthProblem
	Ops     []OpRef
}

func (e *HealthTagError) Error() string {
	const prefix = "specgen: x-plimsoll-health-check on "
	one := ""
	if len(e.Ops) > 0 {
		one = e.Ops[0].String()
	}
	switch e.Problem {
	case HealthNotGET:
		return prefix + one + ": the health route must be a GET"
	case HealthPathParams:
		return prefix + one + ": the health route must have no path parameters"
	case HealthNotBool:
		return prefix + one + ": the value must be true or false"
	case HealthNotCanonical:
		return prefix + one + ": the health route must be a canonical path the broker accepts"
	case HealthMultiple:
		names := make([]string, len(e.Ops))
		for i, o := range e.Ops {
			names[i] = o.String()
		}
		return fmt.Sprintf("%s%d operations (%s): tag exactly one", prefix, len(e.Ops), strings.Join(names, ", "))
	}
	return prefix + one + ": invalid"
}

// Is makes errors.Is(err, ErrHealthTag) true.
func (e *HealthTagError) Is(target error) bool { return target == ErrHealthTag }

// AmbiguousError refuses a document in which two operations share one METHOD and one path
// template up to parameter names: one call described twice, which neither the grant nor the
// client can tell apart. It matches ErrInvalidDocument.
type AmbiguousError struct {
	Source string     // the document's file name, or ""
	Pairs  [][2]OpRef // each pair: the operation kept first, and the one that collides with it
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	b.WriteString("specgen: ")
	if e.Source != "" {
		b.WriteString(e.Source + ": ")
	}
	fmt.Fprintf(&b, "%d operation(s) are declared twice: the same METHOD and path template up to parameter names, which neither the grant nor the client can tell apart: ", len(e.Pairs))
	for i, p := range e.Pairs {
		if i > 0 {
			b.WriteString("; ")
		}
		if i == 5 {
			fmt.Fprintf(&b, "and %d more", len(e.Pairs)-5)
			break
		}
		b.WriteString(p[0].String() + " and " + p[1].String() + " are one call")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidDocument) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrInvalidDocument }
