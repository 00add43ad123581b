package apigen

import (
	"fmt"
	"slices"
	"strings"
)

// Filter picks the operations a grant keeps: a read-only grant is GET and HEAD only, a grant for
// one area of a large API is its tags. The zero Filter keeps every operation.
type Filter struct {
	Methods []string // keep only these methods (any case); none: every method
	Tags    []string // keep only operations with at least one of these tags; none: every tag
	Exclude []string // then drop operations with any of these tags
}

// FilterError is a filter naming a method or tag the document does not have, or one that keeps
// no operation.
type FilterError struct {
	Flag   string // "methods", "tags" or "exclude"; "" when the filters together keep nothing
	Reason string
}

func (e *FilterError) Error() string {
	if e.Flag == "" {
		return "specgen: " + e.Reason
	}
	return "specgen: -" + e.Flag + ": " + e.Reason
}

// Filter keeps only the operations f picks. Every output (routes, preamble, description,
// profile) is then about those alone. A method outside the broker's seven, or a tag that no
// operation of the document has, is refused by name rather than matching nothing.
func (s *Spec) Filter(f Filter) error {
	methods := make([]string, len(f.Methods))
	for i, m := range f.Methods {
		methods[i] = strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(methodOrder, methods[i]) {
			return &FilterError{"methods", fmt.Sprintf("%q is not one of %s", m, strings.Join(methodOrder, ", "))}
		}
	}
	known := s.tags()
	for flag, list := range map[string][]string{"tags": f.Tags, "exclude": f.Exclude} {
		for _, t := range list {
			if !known[t] {
				return &FilterError{flag, fmt.Sprintf("no operation is tagged %q (%s)", t, tagList(known))}
			}
		}
	}
	kept := s.Ops[:0:0]
	for _, op := range s.Ops {
		if f.keeps(op, methods) {
			kept = append(kept, op)
		}
	}
	if len(kept) == 0 {
		return &FilterError{"", "the filters (-methods, -tags, -exclude) keep no operation of the document"}
	}
	s.Ops = kept
	return nil
}

func (f Filter) keeps(op *Operation, methods []string) bool {
	tags := op.tags()
	hasAny := func(want []string) bool {
		return slices.ContainsFunc(tags, func(t string) bool { return slices.Contains(want, t) })
	}
	return (len(methods) == 0 || slices.Contains(methods, op.Method)) &&
		(len(f.Tags) == 0 || hasAny(f.Tags)) && !hasAny(f.Exclude)
}

func (op *Operation) tags() []string {
	if op.op == nil {
		return nil
	}
	return op.op.Tags
}

// tags is every tag an operation of the document has.
func (s *Spec) tags() map[string]bool {
	out := map[string]bool{}
	for _, op := range s.Ops {
		for _, t := range op.tags() {
			out[t] = true
		}
	}
	return out
}

func tagList(known map[string]bool) string {
	if len(known) == 0 {
		return "the document tags no operation"
	}
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	slices.Sort(out)
	return "tags: " + strings.Join(out, ", ")
}
