package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/guests/testplugin"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Kinds lists what the host runs: a front end names them from here, never from a list of its own.
func ExampleKinds() {
	for _, k := range host.Kinds() {
		fmt.Printf("%-6s language=%q extensions=%v\n", k.Name(), k.Language(), k.Extensions())
	}
	k, _ := host.KindFor(".py")
	fmt.Println(".py is", k.Name())
	k, _ = host.KindForLanguage("")
	fmt.Println("no language is", k.Name())
	// Output:
	// js     language="javascript" extensions=[.js]
	// python language="python" extensions=[.py]
	// wasm   language="" extensions=[.wasm]
	// extism language="" extensions=[.wasm]
	// .py is python
	// no language is js
}

// A Go tool built for wasip1 (here the repository's test guest) makes two calls one after the
// other through the Go preamble and prints each answer's status.
func ExampleWasmTool() {
	ctx := context.Background()
	petstore := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"name":"Rex"}`)
	}))
	defer petstore.Close()
	profile := examplePetstore(petstore.URL)

	rt, err := host.New(ctx, host.Options{CacheDir: exampleCacheDir()})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	tool := host.WasmTool("testguest.wasm", testguest.Wasm())
	res := rt.Run(ctx, tool, profile, []byte(`{"op":"serial","n":2,"path":"/pets/%d"}`))
	fmt.Println(tool.Kind(), res.Audit.Status)
	fmt.Printf("%s", res.Output)
	fmt.Println("forwarded:", res.Audit.Forwarded)
	// Output:
	// wasm ok
	// 0 200
	// 1 200
	// forwarded: 2
}

// An Extism plugin (here the repository's Go PDK test plugin) makes its call through
// plimsoll_call; the plugin's output (here the response envelope, preamble/ABI.md) is the tool's.
func ExampleExtismTool() {
	ctx := context.Background()
	petstore := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"name":"Rex"}`)
	}))
	defer petstore.Close()
	profile := examplePetstore(petstore.URL)

	rt, err := host.New(ctx, host.Options{CacheDir: exampleCacheDir()})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	tool := host.ExtismTool("testplugin.wasm", testplugin.Wasm(), "")
	res := rt.Run(ctx, tool, profile, []byte(`{"op":"call","envelope":"{\"method\":\"GET\",\"path\":\"/pets/1\"}"}`))
	var answer struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal(res.Output, &answer); err != nil {
		log.Fatal(err, res.Err)
	}
	fmt.Println(tool.Kind(), res.Audit.Status)
	fmt.Println(answer.Status, answer.Body)
	fmt.Println("trace:", res.Trace[0].Method, res.Trace[0].Path, res.Trace[0].Outcome)
	// Output:
	// extism ok
	// 200 {"name":"Rex"}
	// trace: GET /pets/1 forwarded
}

// examplePetstore grants GET /pets/* on the pet store at base, with no credential.
func examplePetstore(base string) *profiles.Profile {
	u, err := url.Parse(base + "/v1")
	if err != nil {
		log.Fatal(err)
	}
	route, err := profiles.ParseRoute("GET /pets/*")
	if err != nil {
		log.Fatal(err)
	}
	return &profiles.Profile{Name: "petstore", BaseURL: u, Routes: []profiles.Route{route},
		Limits: profiles.DefaultLimits, Budget: profiles.Budget{Calls: profiles.DefaultBudgetCalls}}
}
