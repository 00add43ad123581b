package host_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
)

// A JavaScript tool calls a pet store through the broker. The tool never sees the token: the
// broker adds it to the forwarded call.
func Example() {
	ctx := context.Background()
	petstore := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/pets/42" || r.Header.Get("Authorization") != "Bearer example-token" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"id":42,"name":"Rex"}`)
	}))
	defer petstore.Close()

	dir, err := os.MkdirTemp("", "plimsoll-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	profilePath := filepath.Join(dir, "petstore.yaml")
	err = os.WriteFile(profilePath, []byte(`
base_url: `+petstore.URL+`/v1
credential:
  env: PETSTORE_TOKEN
  scheme: Bearer
routes:
  - GET /pets/*
`), 0o644)
	if err != nil {
		log.Fatal(err)
	}
	profile, err := profiles.LoadFile(profilePath)
	if err != nil {
		log.Fatal(err)
	}

	rt, err := host.New(ctx, host.Options{
		CacheDir: exampleCacheDir(),
		Getenv: func(name string) string {
			if name == "PETSTORE_TOKEN" {
				return "example-token"
			}
			return ""
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	tool := host.JSTool("pet-name.js", `
		const pet = await api.get("/pets/" + input.id);
		console.log("status", pet.status);
		return pet.json().name;
	`)
	res := rt.Run(ctx, tool, profile, []byte(`{"id": 42}`))

	fmt.Printf("output: %s\n", res.Output)
	fmt.Printf("log: %s", res.Log)
	fmt.Printf("trace: %s %s %s %d\n", res.Trace[0].Method, res.Trace[0].Path, res.Trace[0].Outcome, res.Trace[0].Status)
	fmt.Printf("audit: status=%s host_calls=%d forwarded=%d\n", res.Audit.Status, res.Audit.HostCalls, res.Audit.Forwarded)
	// Output:
	// output: "Rex"
	// log: status 200
	// trace: GET /pets/42 forwarded 200
	// audit: status=ok host_calls=1 forwarded=1
}

// exampleCacheDir keeps the example on the test run's shared compilation cache. A program would
// usually leave Options.CacheDir empty.
func exampleCacheDir() string { return testcache.Dir() }

// ReadTool turns bytes from anywhere (a file, stdin, a request) into a tool, by the name's
// extension, refusing anything over MaxToolBytes.
func ExampleReadTool() {
	tool, err := host.ReadTool("hello.js", strings.NewReader(`return "hello " + input.name;`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tool.Name, tool.Kind())

	_, err = host.ToolFromSource("hello.rb", []byte(`puts "hello"`))
	fmt.Println(errors.Is(err, host.ErrToolKind), err)
	// Output:
	// hello.js js
	// true tool hello.rb: want a .js, .py or .wasm file
}
