package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

const exampleAPISynopsis = "plimsoll-run example-api [--listen 127.0.0.1:8080] [--overload]"

// exampleAPIListen is where examples/profiles expect the example API.
const exampleAPIListen = "127.0.0.1:8080"

// cmdExampleAPI serves the demo's API (a pet store and an inventory, with a readiness route) on
// loopback until SIGTERM or SIGINT, for the profiles in examples/profiles.
func cmdExampleAPI(ctx context.Context, args []string, e env) int {
	fs := newFlags("example-api", exampleAPISynopsis, e)
	listen := fs.String("listen", exampleAPIListen, "`ADDR` to serve on; loopback only")
	overload := fs.Bool("overload", false, "answer 503 (Retry-After: 5) from 0.5 s to 2.2 s after the first call, as the demo does")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(e.stderr, "plimsoll-run example-api: unexpected argument %q\n", fs.Arg(0))
		return exitConfig
	}
	if err := checkLoopback(*listen); err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run example-api: --listen %s: %v\n", *listen, err)
		return exitConfig
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run example-api: %v\n", err)
		return exitConfig
	}
	srv := &http.Server{Handler: newDemoAPI(*overload, http.StatusServiceUnavailable, "5"), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "plimsoll-run example-api: listening on http://%s/v1 (token %s; profiles in examples/profiles)\n", ln.Addr(), demoToken)
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(e.stderr, "plimsoll-run example-api: %v\n", err)
		return exitTool
	}
	return exitOK
}

// checkLoopback refuses an address that is not a loopback IP or localhost: the example API
// answers anyone who reaches it.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("the example API serves loopback only (127.0.0.1, ::1 or localhost)")
	}
	return nil
}
