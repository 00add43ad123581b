package main

import (
	"flag"
	"os"

	"github.com/plimsoll/plimsoll/server/fleet"
)

// fleetFlags are serve's --fleet options (issue 27); none set keeps the daemon on its own.
type fleetFlags struct {
	url, name, replica, creds, tokenEnv, ca, cert, key string
	replicas                                           int
}

func addFleetFlags(fs *flag.FlagSet) *fleetFlags {
	f := &fleetFlags{}
	fs.StringVar(&f.url, "fleet", "", "share operator actions with the fleet through NATS JetStream at `URL` (nats://host:4222)")
	fs.StringVar(&f.name, "fleet-name", "default", "the fleet's `NAME`: replicas with the same name share flags")
	fs.StringVar(&f.replica, "replica", "", "this replica's `NAME` in the fleet (default the host name)")
	fs.StringVar(&f.creds, "fleet-creds", "", "NATS credentials `FILE`")
	fs.StringVar(&f.tokenEnv, "fleet-token-env", "", "environment variable `NAME` holding the NATS token")
	fs.StringVar(&f.ca, "fleet-ca", "", "CA `FILE` that signs the NATS server's TLS certificate")
	fs.StringVar(&f.cert, "fleet-cert", "", "TLS client certificate `FILE` for NATS")
	fs.StringVar(&f.key, "fleet-key", "", "TLS client key `FILE` for NATS")
	fs.IntVar(&f.replicas, "fleet-replicas", 1, "copies (`N`, 1–5) a NATS cluster keeps of the fleet's buckets; 3 survives one node's loss")
	return f
}

// options returns the fleet's options, nil without --fleet.
func (f *fleetFlags) options(getenv func(string) string) *fleet.Options {
	if f.url == "" {
		return nil
	}
	o := &fleet.Options{URL: f.url, Name: f.name, Replica: f.replica, CredsFile: f.creds, CAFile: f.ca, CertFile: f.cert, KeyFile: f.key, Replicas: f.replicas}
	if o.Replica == "" {
		o.Replica, _ = os.Hostname()
	}
	if f.tokenEnv != "" {
		o.Token = getenv(f.tokenEnv)
	}
	return o
}
