//go:build wasip1

package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"math"
	"time"

	"github.com/dop251/goja"
)

// natives builds the __plimsoll bridge object that the generic preamble captures and removes
// from the global object. The request envelope crosses as a raw string (JSON.stringify in JS).
// The response comes back as a Response object built in Go (newResponse): goja's JSON.parse of a
// 100-byte envelope costs about 300 µs inside wasm.
//
//	hostCall(requestJSON) -> responseJSON     one ABI host_call
//	hostCallEnvelope(requestJSON) -> Response the same, answered with new Response(envelope)
//	                                          as the preamble would make it (see newResponse)
//	hostCallGet(path) -> Response | undefined GET path with no query, headers or body, when the
//	                                          path is printable ASCII with no '"', backslash or '?';
//	                                          undefined (and no call) otherwise
//	setResponse(Response, ENV)                once, from the preamble: what newResponse builds
//	sleep(ms)                                 blocks; WASI poll_oneoff, bounded by the host
//	log(line)                                 one line to the run log (stderr)
//	b64encode(ArrayBuffer | view) -> string   standard base64 with padding
//	b64decode(string) -> ArrayBuffer
//	utf8decode(ArrayBuffer | view) -> string  invalid bytes become U+FFFD
//	utf8encode(string) -> ArrayBuffer
func (e *engine) natives() *goja.Object {
	rt := e.rt
	o := rt.NewObject()
	set := func(name string, fn func(goja.FunctionCall) goja.Value) {
		if err := o.Set(name, fn); err != nil {
			panic(err) // setting a property on a fresh ordinary object cannot fail
		}
	}
	set("hostCall", func(call goja.FunctionCall) goja.Value {
		resp, err := hostCall(call.Argument(0).String())
		if err != nil {
			panic(rt.NewGoError(err))
		}
		return rt.ToValue(resp)
	})
	set("hostCallEnvelope", func(call goja.FunctionCall) goja.Value {
		resp, err := hostCall(call.Argument(0).String())
		if err != nil {
			panic(rt.NewGoError(err))
		}
		return e.newResponse(resp)
	})
	set("hostCallGet", func(call goja.FunctionCall) goja.Value {
		path := call.Argument(0).String()
		if !plainPath(path) {
			return goja.Undefined()
		}
		// What JSON.stringify makes of the preamble's {method: "GET", path: path}: such a path
		// needs no escaping.
		resp, err := hostCall(`{"method":"GET","path":"` + path + `"}`)
		if err != nil {
			panic(rt.NewGoError(err))
		}
		return e.newResponse(resp)
	})
	set("setResponse", func(call goja.FunctionCall) goja.Value {
		ctor, ok := call.Argument(0).(*goja.Object)
		sym, isSym := call.Argument(1).(*goja.Symbol)
		if !ok || !isSym || e.response != nil {
			panic(rt.NewTypeError("plimsoll: setResponse wants the Response constructor and a symbol, once"))
		}
		proto, ok := ctor.Get("prototype").(*goja.Object)
		if !ok {
			panic(rt.NewTypeError("plimsoll: Response has no prototype"))
		}
		e.response, e.responseProto, e.envSym = ctor, proto, sym
		return goja.Undefined()
	})
	set("sleep", func(call goja.FunctionCall) goja.Value {
		ms := call.Argument(0).ToFloat()
		if ms > 0 {
			// About 292 years fits in a Duration; the run deadline comes long before.
			time.Sleep(time.Duration(math.Min(ms, 9e12) * float64(time.Millisecond)))
		}
		return goja.Undefined()
	})
	set("log", func(call goja.FunctionCall) goja.Value {
		writeString(e.log, call.Argument(0).String()+"\n")
		return goja.Undefined()
	})
	set("b64encode", func(call goja.FunctionCall) goja.Value {
		return rt.ToValue(base64.StdEncoding.EncodeToString(e.bytesArg(call)))
	})
	set("b64decode", func(call goja.FunctionCall) goja.Value {
		b, err := base64.StdEncoding.DecodeString(call.Argument(0).String())
		if err != nil {
			panic(rt.NewTypeError("plimsoll: invalid base64 in a response: %v", err))
		}
		return rt.ToValue(rt.NewArrayBuffer(b))
	})
	set("utf8decode", func(call goja.FunctionCall) goja.Value {
		return rt.ToValue(string(e.bytesArg(call)))
	})
	set("utf8encode", func(call goja.FunctionCall) goja.Value {
		return rt.ToValue(rt.NewArrayBuffer([]byte(call.Argument(0).String())))
	})
	return o
}

// bytesArg returns the bytes of the first argument: an ArrayBuffer, a typed array or a
// DataView. The slice aliases the JS buffer.
func (e *engine) bytesArg(call goja.FunctionCall) []byte {
	var b []byte
	if err := e.rt.ExportTo(call.Argument(0), &b); err != nil {
		panic(e.rt.NewTypeError("plimsoll: want an ArrayBuffer or a typed array: %v", err))
	}
	return b
}

// Math.random draws from crypto randomness (WASI random_get), a buffer at a time.
var (
	randBuf [512]byte
	randPos = len(randBuf)
)

func randomFloat() float64 {
	if randPos+8 > len(randBuf) {
		rand.Read(randBuf[:]) // never fails: Go crashes the program instead
		randPos = 0
	}
	u := binary.LittleEndian.Uint64(randBuf[randPos:])
	randPos += 8
	return float64(u>>11) / (1 << 53)
}

// plainPath reports whether path is printable ASCII with no '"', backslash (which JSON.stringify
// escapes) or '?' (which the preamble splits off as the query). A string with a lone surrogate
// reaches Go with U+FFFD in its place, so it is never plain.
func plainPath(path string) bool {
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '?' {
			return false
		}
	}
	return true
}
