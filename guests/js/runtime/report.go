//go:build wasip1

package main

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// maxReportedFrames bounds the stack printed for an uncaught error, so that the reason stays
// near the end of the log the host reports.
const maxReportedFrames = 10

// uncaught renders a thrown or rejected value as "Uncaught <error string>" followed by its JS
// stack, one "    at …" line per frame.
func (e *engine) uncaught(v goja.Value, toolName string) string {
	head, stack := e.describe(v, toolName)
	var b strings.Builder
	b.WriteString("Uncaught ")
	b.WriteString(head)
	var frames []string
	for _, line := range strings.Split(stack, "\n") {
		line = strings.TrimLeft(line, " \t")
		if strings.HasPrefix(line, "at ") {
			frames = append(frames, cleanFrame(line[len("at "):], toolName))
		}
	}
	for i, f := range frames {
		if i == maxReportedFrames {
			b.WriteString("\n    ... " + strconv.Itoa(len(frames)-i) + " more frames")
			break
		}
		b.WriteString("\n    at ")
		b.WriteString(f)
	}
	return b.String()
}

// describe returns the error string of a thrown value and its stack text, if it has one.
// For an Error that is String(err), e.g. "TypeError: x is not a function"; for any other object
// it is its JSON, and for a primitive its string form.
func (e *engine) describe(v goja.Value, toolName string) (head, stack string) {
	if v == nil {
		return "undefined", ""
	}
	ex := e.rt.Try(func() {
		obj, isObject := v.(*goja.Object)
		if !isObject {
			head = v.String()
			return
		}
		if s, ok := exportString(obj.Get("stack")); ok {
			stack = s
			head = obj.String()
			return
		}
		if out, err := e.jsonStringify(goja.Undefined(), obj); err == nil && !goja.IsUndefined(out) {
			head = out.String()
			return
		}
		head = obj.String()
	})
	if ex != nil {
		head = "(a thrown value that cannot be described: " + ex.Error() + ")"
	}
	return head, stack
}

func exportString(v goja.Value) (string, bool) {
	if v == nil {
		return "", false
	}
	s, ok := v.Export().(string)
	return s, ok
}

// frameString formats one goja stack frame the way cleanFrame leaves a stack line.
func (e *engine) frameString(f goja.StackFrame, toolName string) string {
	var b bytes.Buffer
	f.Write(&b)
	return cleanFrame(b.String(), toolName)
}

// cleanFrame drops the bytecode offset goja appends to positions ("tool.js:3:9(12)" becomes
// "tool.js:3:9") and makes columns on the tool's first line relative to the tool source.
func cleanFrame(s, toolName string) string {
	s = dropPC(s)
	marker := toolName + ":1:"
	start := len(marker)
	if !strings.HasPrefix(s, marker) {
		i := strings.Index(s, "("+marker)
		if i < 0 {
			return s
		}
		start += i + 1
	}
	end := start
	for end < len(s) && isDigit(s[end]) {
		end++
	}
	col, err := strconv.Atoi(s[start:end])
	if err != nil || col <= len(toolPrefix) {
		return s
	}
	return s[:start] + strconv.Itoa(col-len(toolPrefix)) + s[end:]
}

// dropPC removes the last "(digits)" that directly follows a digit.
func dropPC(s string) string {
	for i := len(s) - 1; i > 0; i-- {
		if s[i] != '(' || !isDigit(s[i-1]) {
			continue
		}
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j > i+1 && j < len(s) && s[j] == ')' {
			return s[:i] + s[j+1:]
		}
	}
	return s
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
