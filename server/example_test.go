package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/server"
)

// A daemon in open mode on a loopback ephemeral port runs one JavaScript tool over HTTP.
func Example() {
	dir, _ := os.MkdirTemp("", "plimsoll-serve-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "calc.yaml"), []byte("base_url: http://127.0.0.1:9\nroutes: [GET /*]\n"), 0o644)

	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{Listen: "127.0.0.1:0", Admin: "off", ProfilesDir: dir,
			AuditFile: filepath.Join(dir, "audit.jsonl"), CacheDir: testcache.Dir(),
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Ready:  func(api, _ string) { addr <- api }})
	}()
	url := "http://" + <-addr + "/v1/runs"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"profile":"calc","code":"return input.a + input.b","input":{"a":2,"b":3}}`))
	if err != nil {
		log.Fatal(err)
	}
	var a struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Audit  struct{ Client string }
	}
	json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, a.Status, string(a.Output), a.Audit.Client)

	stop() // as SIGTERM: drain, sync the audit file, return nil
	fmt.Println("stopped:", <-done)
	// Output:
	// 200 ok 5 anonymous
	// stopped: <nil>
}

// A process of its own embeds the daemon: its mux serves the Server's API beside its own routes,
// on its own listener, and Shutdown drains the runs and syncs the audit file.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "plimsoll-embed-example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "calc.yaml"), []byte("base_url: http://127.0.0.1:9\nroutes: [GET /*]\n"), 0o644)

	s, err := server.New(context.Background(), server.Config{ProfilesDir: dir,
		AuditFile: filepath.Join(dir, "audit.jsonl"), CacheDir: testcache.Dir(),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") })
	mux.Handle("/", s.Handler()) // /v1, /mcp, /livez, /readyz, /metrics
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go http.Serve(l, mux)

	resp, err := http.Post("http://"+l.Addr().String()+"/v1/runs", "application/json",
		strings.NewReader(`{"profile":"calc","code":"return input.a * input.b","input":{"a":6,"b":7}}`))
	if err != nil {
		log.Fatal(err)
	}
	var a struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, a.Status, string(a.Output))

	fmt.Println("shutdown:", s.Shutdown(context.Background()))
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	fmt.Println("audit lines:", strings.Count(string(audit), "\n"))
	// Output:
	// 200 ok 42
	// shutdown: <nil>
	// audit lines: 1
}
