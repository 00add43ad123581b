package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/plimsoll/plimsoll/server"
)

const serveSynopsis = "plimsoll-run serve [--listen 127.0.0.1:7070] [--admin 127.0.0.1:7071] [--admin-token-env NAME] [--profiles DIR] [--clients FILE] [--audit FILE] [--max-runs N] [--queue N] [--drain 30s] [--fleet nats://HOST:4222 [--fleet-name NAME] [--replica NAME] [--fleet-creds FILE] [--fleet-token-env NAME] [--fleet-ca FILE] [--fleet-cert FILE] [--fleet-key FILE] [--fleet-replicas N]]"

// cmdServe runs the daemon until SIGTERM or SIGINT (ctx), then drains and exits 0.
func cmdServe(ctx context.Context, args []string, e env) int {
	var c server.Config
	fs := newFlags("serve", serveSynopsis, e)
	fs.StringVar(&c.Listen, "listen", envOr(e, "PLIMSOLL_LISTEN", server.DefaultListen), "API `ADDR` (default $PLIMSOLL_LISTEN, else 127.0.0.1:7070); non-loopback needs --clients")
	fs.StringVar(&c.Admin, "admin", envOr(e, "PLIMSOLL_ADMIN", server.DefaultAdmin), "admin plane `ADDR` (default $PLIMSOLL_ADMIN, else 127.0.0.1:7071; loopback only, unless --admin-token-env), or off")
	fs.StringVar(&c.AdminTokenEnv, "admin-token-env", "", "require the bearer token in environment variable `NAME` on every /admin request")
	dir := fs.String("profiles", "", "profile `DIR` (default $PLIMSOLL_PROFILES, else ./profiles)")
	fs.StringVar(&c.ClientsFile, "clients", "", "clients and tokens `FILE` (.yaml, .toml, .json); without it the daemon is open, on loopback only")
	fs.StringVar(&c.AuditFile, "audit", "", "append every run's audit line to `FILE`, synced, with a crash journal beside it (default stdout, unsynced)")
	fs.IntVar(&c.MaxRuns, "max-runs", server.DefaultMaxRuns, "runs executing at once (`N`)")
	fs.IntVar(&c.Queue, "queue", server.DefaultQueue, "runs waiting for a slot (`N`); past it the daemon answers 429")
	fs.DurationVar(&c.Drain, "drain", server.DefaultDrain, "on SIGTERM, how long in-flight runs may finish (`DUR`)")
	fl := addFleetFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(e.stderr, "plimsoll-run serve: unexpected argument %q\n", fs.Arg(0))
		return exitConfig
	}
	c.ProfilesDir = profilesDir(*dir, e)
	c.Getenv = e.getenv
	c.Fleet = fl.options(e.getenv)
	c.AuditOut = e.stdout
	c.Logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	err := server.Run(ctx, c)
	var ce *server.ConfigError
	var cle *server.ClientsError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce), errors.As(err, &cle):
		fmt.Fprintf(e.stderr, "plimsoll-run serve: %v\n", err)
		return exitConfig
	}
	fmt.Fprintf(e.stderr, "plimsoll-run serve: %v\n", err)
	return exitTool
}
