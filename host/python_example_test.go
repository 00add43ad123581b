package host_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// A Python tool fetches two pets at once through the broker with asyncio.gather.
func ExamplePythonTool() {
	ctx := context.Background()
	petstore := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"pet %s"}`, r.URL.Path[len("/v1/pets/"):])
	}))
	defer petstore.Close()
	base, _ := url.Parse(petstore.URL + "/v1")
	route, err := profiles.ParseRoute("GET /pets/*")
	if err != nil {
		log.Fatal(err)
	}
	profile := &profiles.Profile{Name: "petstore", BaseURL: base, Routes: []profiles.Route{route},
		Limits: profiles.DefaultLimits, Budget: profiles.Budget{Calls: profiles.DefaultBudgetCalls}}

	rt, err := host.New(ctx, host.Options{CacheDir: exampleCacheDir()})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	tool := host.PythonTool("two-pets.py", `
import asyncio
a, b = await asyncio.gather(api.get("/pets/1"), api.get("/pets/2"))
print("statuses", a.status, b.status)
return [a.json()["name"], b.json()["name"]]
`)
	res := rt.Run(ctx, tool, profile, nil)
	fmt.Printf("output: %s\n", res.Output)
	fmt.Printf("log: %s", res.Log)
	fmt.Printf("audit: status=%s forwarded=%d\n", res.Audit.Status, res.Audit.Forwarded)
	// Output:
	// output: ["pet 1","pet 2"]
	// log: statuses 200 200
	// audit: status=ok forwarded=2
}
