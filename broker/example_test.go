package broker_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// A run's broker: load a grant profile, resolve its credential, make calls, write the audit.
func ExampleBroker() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer example-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":42,"asked":%q}`, r.RequestURI)
	}))
	defer api.Close()

	dir, err := os.MkdirTemp("", "profiles")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	profile := "base_url: " + api.URL + "/v1\n" + `
credential:
  scheme: Bearer
  env: PETSTORE_TOKEN
routes:
  - GET /pets/*
budget:
  calls: 10
`
	if err := os.WriteFile(filepath.Join(dir, "petstore.yaml"), []byte(profile), 0o600); err != nil {
		log.Fatal(err)
	}

	p, err := profiles.Load(dir, "petstore")
	if err != nil {
		log.Fatal(err)
	}
	secret, err := p.ResolveSecret(func(string) string { return "example-token" })
	if err != nil {
		log.Fatal(err)
	}
	run, err := broker.New(broker.Config{Profile: p, Secret: secret, RunID: "example", Tool: "pets.js"})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	resp := run.Call(ctx, broker.Request{Method: "GET", Path: "/pets/42", Query: "fields=name"})
	fmt.Println(resp.Status, string(resp.Body))

	resp = run.Call(ctx, broker.Request{Method: "DELETE", Path: "/pets/42"})
	fmt.Println(resp.Status, resp.Headers.Get(broker.OutcomeHeader), string(resp.Body))

	resp = run.Call(ctx, broker.Request{Method: "GET", Path: "/pets/../admin"})
	fmt.Println(resp.Status, resp.Headers.Get(broker.OutcomeHeader))

	audit := run.Finish(broker.StatusOK, nil)
	fmt.Printf("%s %s: %d calls, %d forwarded, %d denied, %d invalid\n", audit.RunID, audit.Status,
		audit.HostCalls, audit.Forwarded, audit.Denied, audit.Invalid)
	// Output:
	// 200 {"id":42,"asked":"/v1/pets/42?fields=name"}
	// 403 denied {"error":"denied","reason":"no granted route matches DELETE /pets/42"}
	// 400 invalid
	// example ok: 3 calls, 1 forwarded, 1 denied, 1 invalid
}
