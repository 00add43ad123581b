// Package natstest starts real NATS servers with JetStream for the fleet's tests: one server on
// loopback, or a routed cluster of them. It is imported only by tests.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// ready is how long a server may take to accept connections on a loaded machine.
const ready = 60 * time.Second

// Start runs one NATS server with JetStream on a fresh temp dir, on a random loopback port.
func Start(t testing.TB) *natsserver.Server { return At(t, t.TempDir(), -1) }

// At runs one NATS server with JetStream's store in dir, on port (-1: a random one), so a test
// can stop it and start it again on the same store and address.
func At(t testing.TB, dir string, port int) *natsserver.Server {
	t.Helper()
	return run(t, &natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true})
}

// Cluster runs n routed NATS servers with JetStream (Members) and returns them once each
// accepts connections; JetStream's meta leader may still be electing.
func Cluster(t testing.TB, n int) []*natsserver.Server {
	t.Helper()
	return Launch(t, Members(t, n)...)
}

// Members are the options of n routed NATS servers with JetStream (named n1…nN, cluster
// "plimsoll") on free loopback ports; a test may Launch some now and the rest later.
func Members(t testing.TB, n int) []*natsserver.Options {
	t.Helper()
	routes := make([]*url.URL, n)
	for i := range routes {
		routes[i] = &url.URL{Scheme: "nats", Host: freeAddr(t)}
	}
	members := make([]*natsserver.Options, n)
	for i, r := range routes {
		port, _ := strconv.Atoi(r.Port())
		members[i] = &natsserver.Options{ServerName: fmt.Sprint("n", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, Routes: routes,
			Cluster: natsserver.ClusterOpts{Name: "plimsoll", Host: "127.0.0.1", Port: port}}
	}
	return members
}

// Launch starts the servers together (a cluster's members need each other) and returns them
// once each accepts connections.
func Launch(t testing.TB, members ...*natsserver.Options) []*natsserver.Server {
	t.Helper()
	nodes := make([]*natsserver.Server, len(members))
	for i, opts := range members {
		nodes[i] = start(t, opts)
	}
	for _, ns := range nodes {
		awaitReady(t, ns)
	}
	return nodes
}

// run starts a server and waits until it accepts connections.
func run(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	ns := start(t, opts)
	awaitReady(t, ns)
	return ns
}

// start starts a server without waiting: a cluster's members need each other to be ready.
func start(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	return ns
}

func awaitReady(t testing.TB, ns *natsserver.Server) {
	t.Helper()
	if !ns.ReadyForConnections(ready) {
		t.Fatalf("NATS %s did not become ready", ns.Name())
	}
}

// freeAddr is a loopback address nothing listens on at the moment it is chosen.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
