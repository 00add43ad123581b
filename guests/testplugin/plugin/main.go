//go:build wasip1

// Command plugin is the Extism test plugin: a Go PDK plugin that the host's tests and benchmarks
// drive with one JSON command as its input. Its function run performs it:
//
//	{"op":"echo"}                          output the input
//	{"op":"noop"}                          output nothing
//	{"op":"call","envelope":"..."}         plimsoll_call with the envelope, output the response
//	{"op":"calls","envelope":"...","n":N}  N calls, output the last response
//	{"op":"raw","offset":N}                plimsoll_call with an arbitrary offset, output the response
//	{"op":"http","url":"..."}              Extism's own http_request
//	{"op":"vars","n":N,"size":S}           var_set N variables of S bytes
//	{"op":"config","keys":[...]}           output what config_get finds for each key
//	{"op":"grow","mib":N}                  hold N MiB on the Go heap, a MiB at a time
//	{"op":"kalloc","mib":N}                allocate N MiB of Extism memory, a MiB at a time
//	{"op":"spin"}                          loop forever, never calling out
//	{"op":"output","bytes":N}              output N bytes
//	{"op":"log","text":"..."}              log text at info, and write it to stderr
//	{"op":"fail","text":"..."}             set the plugin error and return 1
//
// Bench functions: "noop" does nothing; "call" makes one call with the input as the envelope.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/extism/go-pdk"
)

func main() {}

//go:wasmimport extism:host/user plimsoll_call
func plimsollCall(offset uint64) uint64

type command struct {
	Op       string   `json:"op"`
	Envelope string   `json:"envelope"`
	N        int      `json:"n"`
	Offset   uint64   `json:"offset"`
	URL      string   `json:"url"`
	Size     int      `json:"size"`
	Keys     []string `json:"keys"`
	MiB      int      `json:"mib"`
	Bytes    int      `json:"bytes"`
	Text     string   `json:"text"`
}

var held [][]byte

func call(envelope []byte) []byte {
	in := pdk.AllocateBytes(envelope)
	out := plimsollCall(in.Offset())
	in.Free()
	if out == 0 {
		return []byte("no response")
	}
	m := pdk.FindMemory(out)
	defer m.Free()
	return m.ReadBytes()
}

//go:wasmexport run
func run() int32 {
	input := pdk.Input()
	var c command
	if err := json.Unmarshal(input, &c); err != nil {
		pdk.SetErrorString("testplugin: the command is not JSON: " + err.Error())
		return 1
	}
	switch c.Op {
	case "echo":
		pdk.Output(input)
	case "noop":
	case "call":
		pdk.Output(call([]byte(c.Envelope)))
	case "calls":
		var last []byte
		for range c.N {
			last = call([]byte(c.Envelope))
		}
		pdk.Output(last)
	case "raw":
		out := plimsollCall(c.Offset)
		if out == 0 {
			pdk.OutputString("no response")
			return 0
		}
		m := pdk.FindMemory(out)
		pdk.Output(m.ReadBytes())
	case "http":
		resp := pdk.NewHTTPRequest(pdk.MethodGet, c.URL).Send()
		pdk.OutputString(fmt.Sprintf("%d %s", resp.Status(), resp.Body()))
	case "vars":
		value := []byte(strings.Repeat("v", c.Size))
		for i := range c.N {
			pdk.SetVar(fmt.Sprintf("k%d", i), value)
		}
		pdk.OutputString(fmt.Sprintf("set %d", c.N))
	case "config":
		found := map[string]string{}
		for _, k := range c.Keys {
			if v, ok := pdk.GetConfig(k); ok {
				found[k] = v
			}
		}
		b, _ := json.Marshal(found)
		pdk.Output(b)
	case "grow":
		for range c.MiB {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			held = append(held, b)
		}
		pdk.OutputString(fmt.Sprintf("held %d MiB", len(held)))
	case "kalloc":
		for i := range c.MiB {
			m := pdk.Allocate(1 << 20)
			if m.Offset() == 0 {
				pdk.OutputString(fmt.Sprintf("alloc %d failed", i))
				return 0
			}
		}
		pdk.OutputString(fmt.Sprintf("allocated %d MiB", c.MiB))
	case "spin":
		n := 0
		for {
			n++
		}
	case "output":
		pdk.Output([]byte(strings.Repeat("x", c.Bytes)))
	case "log":
		pdk.Log(pdk.LogInfo, c.Text)
		fmt.Fprintln(os.Stderr, "stderr: "+c.Text)
	case "fail":
		pdk.SetErrorString(c.Text)
		return 1
	default:
		pdk.SetErrorString("testplugin: unknown op " + c.Op)
		return 1
	}
	return 0
}

//go:wasmexport noop
func noop() int32 { return 0 }

// callInput makes one plimsoll_call with the input as the request envelope.
//
//go:wasmexport call
func callInput() int32 {
	pdk.Output(call(pdk.Input()))
	return 0
}
