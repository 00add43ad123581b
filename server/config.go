package server

import (
	"github.com/plimsoll/plimsoll/server/fleet"

	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Config configures the daemon. Zero fields take the defaults shown. Listen, Admin and Ready are
// Run's: a Server from New serves wherever it is given a listener or mounted.
type Config struct {
	Listen      string        // API address; default 127.0.0.1:7070
	Admin       string        // admin plane address, loopback unless AdminTokenEnv; default 127.0.0.1:7071; "off" for none
	ProfilesDir string        // the stored grant profiles; required
	ClientsFile string        // clients and tokens; "" is open mode, loopback only
	AuditFile   string        // audit lines, synced per run; "" writes them to AuditOut, unsynced and without a journal
	MaxRuns     int           // runs executing at once; default 32
	Queue       int           // runs waiting for a slot; default 64; negative means none
	Drain       time.Duration // how long in-flight runs may finish after SIGTERM; default 30s

	Getenv    func(string) string // tokens and credentials; default os.Getenv
	Logger    *slog.Logger        // default JSON on stderr
	AuditOut  io.Writer           // with no AuditFile; default os.Stdout
	CacheDir  string              // wazero compilation cache, as host.Options.CacheDir
	Transport http.RoundTripper   // upstream transport, as host.Options.Transport
	PoolSize  int                 // pre-initialised JS instances; default 2; negative means none

	MaxBodyBytes int64         // POST /v1/runs body cap (413 past it); default 8 MiB
	BodyTimeout  time.Duration // a request's headers and body must arrive within this (408 past it); default 30s
	RecentRuns   int           // results kept for GET /v1/runs/{id}; default 1024

	// AdminTokenEnv names the environment variable holding the admin plane's bearer token (at
	// least 16 characters), required on every /admin request; "" means none, and then the admin
	// plane serves on loopback only.
	AdminTokenEnv string

	// Ready, when set, is called once the listeners are bound, with their addresses ("" for no
	// admin listener), before the engine is warm: tests use it to learn ephemeral ports.
	Ready func(api, admin string)

	// Fleet, when set, shares force-open and clear with the fleet's other replicas through NATS
	// JetStream (server/fleet, fleetlink.go); nil keeps them local.
	Fleet *fleet.Options

	// QuotaNow is the clock of the clients' quota windows; nil is time.Now. QuotaSync is how
	// often a fleet replica shares its quota counts; 0 is DefaultQuotaSync (quota.go).
	QuotaNow  func() time.Time
	QuotaSync time.Duration
}

// ConfigError is a refused configuration: Flag names the setting (as the command's flag).
type ConfigError struct {
	Flag   string
	Reason string
}

func (e *ConfigError) Error() string { return "--" + e.Flag + ": " + e.Reason }

const (
	DefaultListen       = "127.0.0.1:7070"
	DefaultAdmin        = "127.0.0.1:7071"
	DefaultMaxRuns      = 32
	DefaultQueue        = 64
	DefaultDrain        = 30 * time.Second
	DefaultMaxBodyBytes = 8 << 20
	DefaultRecentRuns   = 1024
	DefaultBodyTimeout  = 30 * time.Second
	// DrainGrace is how long past --drain the cancelled runs' handlers get to answer; then every
	// connection still open is closed (and the handlers return at once).
	DrainGrace = 1 * time.Second
)

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Admin == "" {
		c.Admin = DefaultAdmin
	}
	if c.MaxRuns == 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.Queue == 0 {
		c.Queue = DefaultQueue
	}
	c.Queue = max(c.Queue, 0)
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.RecentRuns <= 0 {
		c.RecentRuns = DefaultRecentRuns
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2
	}
	c.PoolSize = max(c.PoolSize, 0)
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if c.AuditOut == nil {
		c.AuditOut = os.Stdout
	}
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.ProfilesDir == "":
		return &ConfigError{Flag: "profiles", Reason: "a profile directory is required"}
	case c.MaxRuns < 0:
		return &ConfigError{Flag: "max-runs", Reason: fmt.Sprintf("%d must be at least 1", c.MaxRuns)}
	case c.Drain < 0:
		return &ConfigError{Flag: "drain", Reason: fmt.Sprintf("%s must be positive", c.Drain)}
	}
	if c.ClientsFile == "" && !isLoopback(c.Listen) {
		return &ConfigError{Flag: "listen", Reason: fmt.Sprintf("%s is not a loopback address: without --clients the daemon is open to anyone who can connect, so it serves only on loopback", c.Listen)}
	}
	if c.Admin != "off" && c.AdminTokenEnv == "" && !isLoopback(c.Admin) {
		return &ConfigError{Flag: "admin", Reason: fmt.Sprintf("%s is not a loopback address: the admin plane has no authentication without --admin-token-env", c.Admin)}
	}
	return nil
}

// IsLoopback says whether a host:port address binds only loopback interfaces. An empty host
// binds every interface, so it is not loopback.
func isLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
