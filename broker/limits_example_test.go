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
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

// Two runs share one Limits: the profile allows one call in flight and none waiting, so while the
// first run's call is at the API, the second run's is shed (503, Retry-After 1) without reaching it.
func ExampleLimits() {
	held, release := make(chan struct{}), make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(held)
		<-release
		fmt.Fprint(w, `{}`)
	}))
	defer api.Close()
	dir, err := os.MkdirTemp("", "profiles")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	yaml := "base_url: " + api.URL + "\nroutes: [GET /pets/*]\nconcurrency:\n  limit: 1\n  max_queue: 0\n"
	if err := os.WriteFile(filepath.Join(dir, "petstore.yaml"), []byte(yaml), 0o600); err != nil {
		log.Fatal(err)
	}
	p, err := profiles.Load(dir, "petstore")
	if err != nil {
		log.Fatal(err)
	}

	limits := broker.NewLimits() // one per process: a host.Runtime has its own (Runtime.Limits)
	run := func(tier bulkhead.Tier) *broker.Broker {
		b, err := broker.New(broker.Config{Profile: p, Limits: limits, Criticality: tier})
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	first, second := run(bulkhead.Normal), run(bulkhead.Critical)
	done := make(chan int)
	go func() {
		done <- first.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets/1"}).Status
	}()
	<-held

	resp := second.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets/2"})
	fmt.Println(resp.Status, resp.Headers.Get("Retry-After"), second.Trace()[0].Reason)
	close(release)
	fmt.Println("first run:", <-done)
	st := limits.State()[0]
	fmt.Println(st.Profile, "limit", st.Limit, "shed critical", st.Shed["critical"])
	// Output:
	// 503 1 API limit: 1 in flight at limit 1 and the queue is full (0 queued)
	// first run: 200
	// petstore limit 1 shed critical 1
}
