//go:build wasip1

package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/dop251/goja"

	preamble "github.com/plimsoll/plimsoll/preamble/js"
)

// maxCallDepth is goja's call-stack limit, in frames. Plain JS-to-JS calls take one frame;
// a call through a native function (Array.prototype.map, a getter, an async function) takes
// more. Hitting it ends the run with exitLimited.
const maxCallDepth = 1000

// The tool source is the body of an async function. The prefix shares the source's first line,
// so line numbers in stack traces are the tool's own; columns on line 1 are corrected when the
// stack is printed.
const (
	toolPrefix = "(async function(input) {"
	toolSuffix = "\n})"
)

// Script names as they appear in stack traces.
const (
	genericPreambleName = "plimsoll:preamble.js"
	extraPreambleName   = "preamble.js"
	defaultToolName     = "tool.js"
)

// engine is one goja runtime with the generic preamble loaded.
type engine struct {
	rt            *goja.Runtime
	jsonParse     goja.Callable
	jsonStringify goja.Callable
	log           io.Writer // the run log; console output goes here

	// The preamble's Response constructor, its prototype and the symbol under which a response
	// keeps its envelope, handed over by setResponse.
	response      *goja.Object
	responseProto *goja.Object
	envSym        *goja.Symbol

	// unhandled holds rejected promises that had no handler when they were rejected, in order.
	unhandled []*goja.Promise
}

func newEngine() (*engine, error) {
	rt := goja.New()
	e := &engine{rt: rt, log: io.Discard}
	rt.SetMaxCallStackSize(maxCallDepth)
	rt.SetRandSource(randomFloat)
	rt.SetPromiseRejectionTracker(e.trackRejection)

	j := rt.Get("JSON").ToObject(rt)
	var ok bool
	if e.jsonParse, ok = goja.AssertFunction(j.Get("parse")); !ok {
		return nil, errors.New("JSON.parse is missing")
	}
	if e.jsonStringify, ok = goja.AssertFunction(j.Get("stringify")); !ok {
		return nil, errors.New("JSON.stringify is missing")
	}
	if err := rt.Set("__plimsoll", e.natives()); err != nil {
		return nil, err
	}
	prg, err := goja.Compile(genericPreambleName, preamble.Source, true)
	if err != nil {
		return nil, fmt.Errorf("compiling the generic preamble: %w", err)
	}
	if _, err := rt.RunProgram(prg); err != nil {
		return nil, fmt.Errorf("evaluating the generic preamble: %w", err)
	}
	return e, nil
}

// warmUp takes a trivial tool through every step of run except reading stdin and writing the
// result, so that what goja and encoding/json build lazily on first use (builtins, the async
// function and promise machinery, JSON's decoders) is built here, in the state the host
// snapshots after _initialize, instead of in every run. It leaves nothing a tool can see: the
// tool is an anonymous function that is never stored, it reads no randomness and makes no host
// call, and the rejection tracker is emptied. Errors are ignored: run reports them for real.
func (e *engine) warmUp() {
	defer func() { e.unhandled = nil }()
	req, err := decodeRequest([]byte(`{"tool":"return input.x;","input":{"x":[1,"a",null]},"preamble":"","name":"warm.js"}`))
	if err != nil {
		return
	}
	prg, err := goja.Compile(req.name, toolPrefix+req.tool+toolSuffix, false)
	if err != nil {
		return
	}
	fnValue, err := e.rt.RunProgram(prg)
	if err != nil {
		return
	}
	fn, ok := goja.AssertFunction(fnValue)
	if !ok {
		return
	}
	input, err := e.jsonParse(goja.Undefined(), e.rt.ToValue(req.input))
	if err != nil {
		return
	}
	result, err := fn(goja.Undefined(), input)
	if err != nil {
		return
	}
	if promise, ok := result.Export().(*goja.Promise); ok && promise.State() == goja.PromiseStateFulfilled {
		_, _ = e.jsonStringify(goja.Undefined(), promise.Result())
	}
}

func (e *engine) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	switch op {
	case goja.PromiseRejectionReject:
		e.unhandled = append(e.unhandled, p)
	case goja.PromiseRejectionHandle:
		for i, q := range e.unhandled {
			if q == p {
				e.unhandled = append(e.unhandled[:i], e.unhandled[i+1:]...)
				break
			}
		}
	}
}

// run runs one tool described by the JSON on stdin.
func (e *engine) run(stdin io.Reader, stdout, stderr io.Writer) int32 {
	e.log = stderr
	data, err := io.ReadAll(stdin)
	if err != nil {
		return e.fail("plimsoll: reading stdin: " + err.Error())
	}
	req, err := decodeRequest(data)
	if err != nil {
		return e.fail("plimsoll: bad stdin: " + err.Error())
	}

	if req.preamble != "" {
		prg, err := goja.Compile(extraPreambleName, req.preamble, false)
		if err != nil {
			return e.fail("plimsoll: the API preamble does not compile: " + err.Error())
		}
		if _, err := e.rt.RunProgram(prg); err != nil {
			return e.failErr("the API preamble failed", err, "")
		}
	}

	prg, err := goja.Compile(req.name, toolPrefix+req.tool+toolSuffix, false)
	if err != nil {
		return e.fail("plimsoll: the tool does not compile: " + err.Error())
	}
	fnValue, err := e.rt.RunProgram(prg)
	if err != nil {
		return e.failErr("the tool failed", err, req.name)
	}
	fn, ok := goja.AssertFunction(fnValue)
	if !ok {
		return e.fail("plimsoll: the tool source does not form a function body (is a brace unbalanced?)")
	}

	input := goja.Null()
	if req.input != "null" {
		if input, err = e.jsonParse(goja.Undefined(), e.rt.ToValue(req.input)); err != nil {
			return e.failErr("the input could not be parsed", err, "")
		}
	}

	result, err := fn(goja.Undefined(), input)
	if err != nil {
		return e.failErr("the tool failed", err, req.name)
	}
	promise, ok := result.Export().(*goja.Promise)
	if !ok {
		return e.fail("plimsoll: the tool did not return a promise (is a brace unbalanced?)")
	}
	e.warnUnhandled(promise, req.name)

	switch promise.State() {
	case goja.PromiseStatePending:
		return e.fail("plimsoll: the tool's promise is still pending and nothing is left to run " +
			"(an await is waiting for a promise that nothing will settle)")
	case goja.PromiseStateRejected:
		return e.fail(e.uncaught(promise.Result(), req.name))
	}

	out, err := e.jsonStringify(goja.Undefined(), promise.Result())
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) && ex.Value() != nil {
			head, _ := e.describe(ex.Value(), req.name)
			return e.fail("plimsoll: the tool's result cannot be turned into JSON: " + head)
		}
		return e.failErr("the tool's result cannot be turned into JSON", err, req.name)
	}
	text := "null"
	if !goja.IsUndefined(out) {
		text = out.String()
	}
	if err := writeString(stdout, text); err != nil {
		return e.fail("plimsoll: writing the output: " + err.Error())
	}
	return exitOK
}

// warnUnhandled logs a line for each promise that was rejected and never handled, other than
// the tool's own promise.
func (e *engine) warnUnhandled(main *goja.Promise, toolName string) {
	for _, p := range e.unhandled {
		if p == main {
			continue
		}
		head, _ := e.describe(p.Result(), toolName)
		writeString(e.log, "plimsoll: warning: a promise was rejected and never handled: "+head+"\n")
	}
	e.unhandled = nil
}

// fail writes msg as the last line of the log and returns exitFailed.
func (e *engine) fail(msg string) int32 {
	writeString(e.log, msg+"\n")
	return exitFailed
}

// failErr reports an error returned by goja: the call-stack limit, a JS exception, or anything
// else. what says which step failed, for errors that are not JS exceptions.
func (e *engine) failErr(what string, err error, toolName string) int32 {
	var overflow *goja.StackOverflowError
	if errors.As(err, &overflow) {
		msg := "plimsoll: call stack overflow\n"
		frames := overflow.Stack()
		for i, f := range frames {
			if i == 3 {
				msg += "    ... " + strconv.Itoa(len(frames)-i) + " more frames\n"
				break
			}
			msg += "    at " + e.frameString(f, toolName) + "\n"
		}
		writeString(e.log, msg+"plimsoll: limit: call stack depth "+strconv.Itoa(maxCallDepth)+" exceeded\n")
		return exitLimited
	}
	var ex *goja.Exception
	if errors.As(err, &ex) && ex.Value() != nil {
		return e.fail(e.uncaught(ex.Value(), toolName))
	}
	return e.fail("plimsoll: " + what + ": " + err.Error())
}

func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
