//go:build wasip1

// Command guest is the Go test guest: a wasip1 reactor whose exported run reads one command from
// stdin and does what the host's tests need. It is not a tool anyone would write; see
// guests/testguest for the embedded build.
//
// The command is one JSON object:
//
//	{"op":"call","n":3,"envelope":"{...}","cap":4096,"print":true}
//	    make n host calls with envelope; cap is the response buffer (a smaller one exercises
//	    host_response); print writes each response envelope to stdout, one a line
//	{"op":"call",...,"envelope_base64":"..."}
//	    the same with an envelope given as raw bytes (base64), for bytes JSON text cannot carry
//	    such as invalid UTF-8
//	{"op":"raw","args":[req_ptr,req_len,resp_ptr,resp_cap]}
//	    call host_call with these exact i32s and print the return value; a negative req_ptr or
//	    resp_ptr means "my buffer", so only the other values are arbitrary
//	{"op":"raw","fn":"host_response","args":[ptr,cap],"pending":true}
//	    the same for host_response (a negative ptr means "my buffer"); with pending, first make a
//	    host_call with no room for the answer, so that a response is pending, and print its result
//	{"op":"raw","fn":"host_submit","args":[req_ptr,req_len]}
//	{"op":"raw","fn":"host_wait","args":[ids_ptr,ids_cap,timeout_ms]}
//	{"op":"raw","fn":"host_result","args":[id,ptr,cap]}
//	    the same for the ABI v2 imports (a negative pointer means "my buffer", which holds a small
//	    GET envelope for host_submit, or "envelope" when given)
//	{"op":"fanout","n":10,"path":"/pets/%d"}
//	    n concurrent GETs (ABI v2, the Go preamble's Go and WaitAll) of path with the call's index,
//	    then print "index status" for each, in call order, and on stderr "calls took N µs"
//	{"op":"serial","n":10,"path":"/pets/%d"}
//	    the same one call after another, with the Go preamble's blocking Do
//	{"op":"mark","msg":"<reversed marker>","n":N,"scan":true}
//	    keep n copies of the marker (msg reversed) in memory; with scan, then print what scan finds
//	{"op":"scan","msg":"<reversed marker>"}
//	    print how many copies of the marker (msg reversed) lie in linear memory below the end of
//	    a fresh 8 MiB allocation. The marker is never built in this run, so a fresh instance finds 0
//	{"op":"loop"}                   spin forever
//	{"op":"oom"}                    allocate and keep 1 MiB blocks until the runtime dies
//	{"op":"flood","fd":1,"n":N}     write n bytes (forever when n is 0) to stdout (1) or stderr (2)
//	{"op":"sleep","ms":N}           sleep, then print "slept"
//	{"op":"fail","msg":"..."}       write msg to stderr and return 1
//	{"op":"panic","msg":"..."}      panic (the Go runtime exits with code 2)
//	{"op":"env"}                    print what the sandbox lets the guest see: args, environment,
//	                                files, clock and randomness
//	{"op":"state"}                  bump a package-level counter and print it (1 in a fresh instance)
package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
	"unsafe"

	plimsoll "github.com/plimsoll/plimsoll/preamble/go"
)

//go:wasmimport plimsoll host_call
func hostCall(reqPtr, reqLen, respPtr, respCap uint32) int32

//go:wasmimport plimsoll host_response
func hostResponse(ptr, capacity uint32) int32

//go:wasmimport plimsoll host_submit
func hostSubmit(reqPtr, reqLen uint32) int32

//go:wasmimport plimsoll host_wait
func hostWait(idsPtr, idsCap, timeoutMs uint32) int32

//go:wasmimport plimsoll host_result
func hostResult(id int32, ptr, capacity uint32) int32

type command struct {
	Op       string  `json:"op"`
	N        int     `json:"n"`
	Envelope string  `json:"envelope"`
	EnvB64   string  `json:"envelope_base64"`
	Cap      int     `json:"cap"`
	Print    bool    `json:"print"`
	Args     []int64 `json:"args"`
	FD       int     `json:"fd"`
	Ms       int     `json:"ms"`
	Msg      string  `json:"msg"`
	Fn       string  `json:"fn"`
	Scan     bool    `json:"scan"`
	Pending  bool    `json:"pending"`
	Path     string  `json:"path"`
}

var counter int

func main() {}

//go:wasmexport run
func run() int32 {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail("read stdin: " + err.Error())
	}
	var c command
	if err := json.Unmarshal(in, &c); err != nil {
		return fail("bad command: " + err.Error())
	}
	switch c.Op {
	case "call":
		return call(c)
	case "fanout":
		return fanout(c)
	case "serial":
		return serial(c)
	case "raw":
		return raw(c)
	case "loop":
		for {
			counter++
		}
	case "oom":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	case "flood":
		return flood(c)
	case "sleep":
		time.Sleep(time.Duration(c.Ms) * time.Millisecond)
		fmt.Println("slept")
	case "fail":
		return fail(c.Msg)
	case "panic":
		panic(c.Msg)
	case "env":
		return env()
	case "state":
		counter++
		fmt.Println(counter)
	case "mark":
		return mark(c)
	case "scan":
		fmt.Println(scan(c.Msg))
	default:
		return fail("unknown op " + c.Op)
	}
	return 0
}

func call(c command) int32 {
	req := []byte(c.Envelope)
	if c.EnvB64 != "" {
		var err error
		if req, err = base64.StdEncoding.DecodeString(c.EnvB64); err != nil {
			return fail("envelope_base64: " + err.Error())
		}
	}
	resp := make([]byte, max(c.Cap, 1))
	for range c.N {
		n := hostCall(addr(req), uint32(len(req)), addr(resp), uint32(c.Cap))
		if n < 0 {
			return fail(fmt.Sprintf("host_call returned %d", n))
		}
		got := resp
		if int(n) > c.Cap {
			got = make([]byte, n)
			if m := hostResponse(addr(got), uint32(n)); m != n {
				return fail(fmt.Sprintf("host_response returned %d, want %d", m, n))
			}
		}
		if c.Print {
			os.Stdout.Write(got[:n])
			os.Stdout.Write([]byte("\n"))
		}
	}
	runtime.KeepAlive(req)
	runtime.KeepAlive(resp)
	return 0
}

// fanout makes n concurrent GETs of path (a format with one %d, the call's index) with the Go
// preamble's Go and WaitAll, then prints each call's status, one a line, in call order.
func fanout(c command) int32 {
	start := time.Now()
	calls := make([]*plimsoll.Call, c.N)
	for i := range calls {
		calls[i] = plimsoll.Go(plimsoll.Request{Method: "GET", Path: fmt.Sprintf(c.Path, i)})
	}
	_ = plimsoll.WaitAll(calls...) // each call's own answer is printed below
	took := time.Since(start)
	for i, call := range calls {
		resp, err := call.Wait()
		printAnswer(i, resp, err)
	}
	fmt.Fprintf(os.Stderr, "calls took %d µs\n", took.Microseconds())
	return 0
}

// serial is fanout one call after another, with the Go preamble's blocking Do.
func serial(c command) int32 {
	start := time.Now()
	type answer struct {
		resp *plimsoll.Response
		err  error
	}
	answers := make([]answer, c.N)
	for i := range answers {
		answers[i].resp, answers[i].err = plimsoll.Do(plimsoll.Request{Method: "GET", Path: fmt.Sprintf(c.Path, i)})
	}
	took := time.Since(start)
	for i, a := range answers {
		printAnswer(i, a.resp, a.err)
	}
	fmt.Fprintf(os.Stderr, "calls took %d µs\n", took.Microseconds())
	return 0
}

func printAnswer(i int, resp *plimsoll.Response, err error) {
	var oe *plimsoll.OutcomeError
	switch {
	case err == nil:
		fmt.Println(i, resp.Status)
	case errors.As(err, &oe):
		fmt.Println(i, oe.Status, oe.Outcome)
	default:
		fmt.Println(i, "error", err)
	}
}

func raw(c command) int32 {
	buf := make([]byte, 256)
	if r, ok := rawV2(c, buf); ok {
		fmt.Println(r)
		runtime.KeepAlive(buf)
		return 0
	}
	if c.Fn == "host_response" {
		if len(c.Args) != 2 {
			return fail("raw host_response needs 2 args")
		}
		ptr := uint32(c.Args[0])
		if c.Args[0] < 0 {
			ptr = addr(buf)
		}
		if c.Pending {
			req := []byte(`{"method":"GET","path":"/"}`)
			fmt.Println(hostCall(addr(req), uint32(len(req)), addr(buf), 0))
			runtime.KeepAlive(req)
		}
		fmt.Println(hostResponse(ptr, uint32(c.Args[1])))
		runtime.KeepAlive(buf)
		return 0
	}
	if len(c.Args) != 4 {
		return fail("raw needs 4 args")
	}
	copy(buf, `{"method":"GET","path":"/"}`)
	a := [4]uint32{}
	for i, v := range c.Args {
		a[i] = uint32(v)
		if v < 0 && (i == 0 || i == 2) {
			a[i] = addr(buf)
		}
	}
	fmt.Println(hostCall(a[0], a[1], a[2], a[3]))
	runtime.KeepAlive(buf)
	return 0
}

// rawV2 calls one ABI v2 import with the given arguments (a negative pointer means a buffer of
// the guest's own): host_submit(ptr, len) of a small GET, host_wait(ptr, cap, timeout_ms),
// host_result(id, ptr, cap).
func rawV2(c command, buf []byte) (int32, bool) {
	env := `{"method":"GET","path":"/"}`
	if c.Envelope != "" {
		env = c.Envelope
	}
	copy(buf, env)
	arg := func(i int) uint32 {
		if c.Args[i] < 0 {
			return addr(buf)
		}
		return uint32(c.Args[i])
	}
	switch {
	case c.Fn == "host_submit" && len(c.Args) == 2:
		return hostSubmit(arg(0), arg(1)), true
	case c.Fn == "host_wait" && len(c.Args) == 3:
		return hostWait(arg(0), arg(1), uint32(c.Args[2])), true
	case c.Fn == "host_result" && len(c.Args) == 3:
		return hostResult(int32(c.Args[0]), arg(1), arg(2)), true
	}
	return 0, false
}

func flood(c command) int32 {
	w := os.Stdout
	if c.FD == 2 {
		w = os.Stderr
	}
	chunk := make([]byte, 4096)
	for i := range chunk {
		chunk[i] = 'a' + byte(i%26)
	}
	for written := 0; c.N == 0 || written < c.N; {
		n := len(chunk)
		if c.N > 0 && c.N-written < n {
			n = c.N - written
		}
		if _, err := w.Write(chunk[:n]); err != nil {
			return fail("write: " + err.Error())
		}
		written += n
	}
	return 0
}

func env() int32 {
	_, ferr := os.ReadFile("/etc/passwd")
	_, derr := os.ReadDir("/")
	r := make([]byte, 16)
	_, rerr := rand.Read(r)
	out := map[string]any{
		"args":       os.Args,
		"environ":    os.Environ(),
		"read_file":  errString(ferr),
		"read_dir":   errString(derr),
		"unix_ms":    time.Now().UnixMilli(),
		"random":     hex.EncodeToString(r),
		"random_err": errString(rerr),
	}
	b, _ := json.Marshal(out)
	os.Stdout.Write(b)
	return 0
}

// marked keeps the copies made by mark alive for the rest of the run.
var marked [][]byte

func mark(c command) int32 {
	m := reverse(c.Msg)
	for range c.N {
		marked = append(marked, append([]byte(nil), m...))
	}
	if c.Scan {
		fmt.Println(scan(c.Msg))
	}
	return 0
}

// scan counts the copies of reverse(rev) in linear memory from address 1 (Go keeps address 0 as
// nil) to the end of a fresh 8 MiB allocation, comparing against rev backwards so that the
// marker itself is never built here.
func scan(rev string) int {
	top := make([]byte, 8<<20)
	end := uintptr(unsafe.Pointer(unsafe.SliceData(top))) + uintptr(len(top))
	mem := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(1))), end-1)
	n, k := 0, len(rev)
	if k == 0 {
		return 0
	}
	for i := 0; i+k <= len(mem); i++ {
		j := 0
		for j < k && mem[i+j] == rev[k-1-j] {
			j++
		}
		if j == k {
			n++
		}
	}
	runtime.KeepAlive(top)
	return n
}

func reverse(s string) []byte {
	b := make([]byte, len(s))
	for i := range len(s) {
		b[i] = s[len(s)-1-i]
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func fail(msg string) int32 {
	fmt.Fprintln(os.Stderr, msg)
	return 1
}

// addr is the guest address of b's first byte.
func addr(b []byte) uint32 {
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
