package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/examples"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
)

// The inventory example in Go runs as a wasip1 command on the Go preamble, and as an Extism
// plugin on preamble/extism-go (recognised by its imports, calling through plimsoll_call): each
// lists and fetches items and rides out an overloaded item by waiting out the broker's shed
// answer, with the same trace.
func TestGoInventoryExamples(t *testing.T) {
	for _, c := range []struct {
		tool host.Tool
		log  string // a line the example's log must hold
	}{
		{host.WasmTool("go-inventory.wasm", examples.GoInventory()), ""},
		{host.WasmTool("extism-inventory.wasm", examples.ExtismInventory()), "info: 3 items, 60 in stock"},
	} {
		t.Run(c.tool.Name, func(t *testing.T) { runInventory(t, c.tool, c.log) })
	}
}

func runInventory(t *testing.T, tool host.Tool, logLine string) {
	var mu sync.Mutex
	var seen []string
	overloaded := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI)
		first503 := r.URL.Path == "/v1/items/2" && overloaded
		if first503 {
			overloaded = false
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer inv-token":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v1/items":
			fmt.Fprint(w, `{"items":[1,2,3]}`)
		case first503:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			id := strings.TrimPrefix(r.URL.Path, "/v1/items/")
			fmt.Fprintf(w, `{"id":%s,"name":"item %s","stock":%s0}`, id, id, id)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	profile := filepath.Join(dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(profile, []byte("base_url: "+srv.URL+"/v1\ncredential:\n  scheme: Bearer\n  env: INV_TOKEN\n"+
		"routes: [GET /items, GET /items/*]\n"), 0o600))
	p, err := profiles.LoadFile(profile)
	require.NoError(t, err)

	rt, err := host.New(context.Background(), host.Options{CacheDir: testcache.Dir(), Getenv: func(k string) string {
		if k == "INV_TOKEN" {
			return "inv-token"
		}
		return ""
	}})
	require.NoError(t, err)
	defer rt.Close(context.Background())

	res := rt.Run(context.Background(), tool, p, []byte(`{"limit":3}`))
	require.NoError(t, res.Err, "log:\n%s", res.Log)
	assert.Contains(t, string(res.Log), logLine)
	var out map[string]int
	require.NoError(t, json.Unmarshal(res.Output, &out), "%s", res.Output)
	assert.Equal(t, map[string]int{"items": 3, "stock": 60}, out)

	var outcomes []string
	for _, e := range res.Trace {
		outcomes = append(outcomes, fmt.Sprintf("%s %s %s %d", e.Method, e.Path, e.Outcome, e.Status))
	}
	assert.Equal(t, []string{
		"GET /items forwarded 200",
		"GET /items/1 forwarded 200",
		"GET /items/2 forwarded 503", // the API is overloaded: the breaker opens for 1 s
		"GET /items/2 shed 503",      // retried at once: shed, with Retry-After: 1
		"GET /items/2 forwarded 200", // after waiting it out
		"GET /items/3 forwarded 200",
	}, outcomes)
	assert.Equal(t, []string{"GET /v1/items?limit=3", "GET /v1/items/1", "GET /v1/items/2", "GET /v1/items/2", "GET /v1/items/3"}, seen)
}
