package main

import (
	"net"
	"strings"
	"testing"
)

// A fleet that cannot be reached at start is a configuration error: the daemon never serves
// without the fleet's flags.
func TestServeRefusesAnUnreachableFleet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a loopback port nobody listens on
	code, _, stderr := invoke(t, "", nil, "serve", "--listen", "127.0.0.1:0", "--admin", "off", "--profiles", t.TempDir(),
		"--fleet", "nats://"+addr, "--replica", "r1")
	if code != exitConfig || !strings.Contains(stderr, "--fleet: fleet: connect nats://"+addr) {
		t.Fatalf("exit %d, stderr %q; want %d naming --fleet and the URL", code, stderr, exitConfig)
	}
}
