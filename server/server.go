package server

import (
	"github.com/plimsoll/plimsoll/server/fleet"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/auditlog"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server/admission"
	"github.com/plimsoll/plimsoll/server/mcpserver"
)

// Server is a running daemon; Run builds and serves one.
type Server struct {
	cfg     Config
	log     *slog.Logger
	rt      *host.Runtime
	store   *Store
	clients *Clients // nil in open mode
	adm     *admission.Controller
	audit   *auditlog.File
	journal *journal // nil without an audit file
	metrics *metrics
	recent  *ring
	plane   *controlPlane     // live runs, forced-open flags, the admin token (admin.go, state.go)
	mcp     *mcpserver.Server // /mcp on the API listener; set by apiHandler
	tracing *tracing          // OpenTelemetry spans; nil when OTEL_* does not ask for them (otel.go)
	fleet   *fleet.Fleet      // nil without Config.Fleet (fleetlink.go)
	quotas  *quotas           // the clients' quotas (quota.go)

	ready    atomic.Bool
	draining atomic.Bool
	runsCtx  context.Context // ends when the drain deadline passes: in-flight runs are cancelled
	cancel   context.CancelFunc
	runs     inflight     // run requests past the drain check, until their answer is written
	detached detachedRuns // runs started with "wait": false, until they end (detached.go)
}

// inflight counts requests and tells when none is left after a drain began; the drain check and
// the count change under one lock, so no request slips in after the drain saw zero.
type inflight struct {
	mu       sync.Mutex
	n        int
	draining bool
	zero     chan struct{}
}

// enter counts a request; false once the drain has begun.
func (f *inflight) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.draining {
		return false
	}
	f.n++
	return true
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.draining {
		close(f.zero)
	}
}

// drain refuses new requests and returns a channel closed when the last one leaves.
func (f *inflight) drain() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.draining {
		f.draining, f.zero = true, make(chan struct{})
		if f.n == 0 {
			close(f.zero)
		}
	}
	return f.zero
}

// Run serves the daemon until ctx ends, then drains: readiness fails, new runs get 503,
// in-flight runs have cfg.Drain to finish before they are cancelled, and every run's audit line
// is synced. It returns nil after a clean drain; a *ConfigError or *ClientsError when the
// configuration is refused.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	s, err := newServer(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.joinFleet(ctx); err != nil {
		return err
	}
	defer s.leaveFleet()
	api, admin, err := s.listen()
	if err != nil {
		return err
	}
	if cfg.Ready != nil {
		cfg.Ready(addrOf(api), addrOf(admin))
	}
	apiSrv := s.serve(api, s.apiHandler())
	adminSrv := s.serve(admin, s.adminHandler())
	go s.warm(ctx)
	<-ctx.Done()
	return s.drain(apiSrv, adminSrv)
}

func newServer(ctx context.Context, cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Logger, adm: admission.New(cfg.MaxRuns, cfg.Queue), recent: newRing(cfg.RecentRuns)}
	s.runsCtx, s.cancel = context.WithCancel(context.Background())
	s.metrics = newMetrics(s.adm, s.ready.Load)
	s.quotas = newQuotas(cfg.QuotaNow, s.metrics.reg)
	plane, err := newControlPlaneFor(cfg)
	if err != nil {
		return nil, err
	}
	s.plane = plane
	if s.tracing, err = newTracing(ctx, cfg.Getenv); err != nil {
		return nil, err
	}
	s.metrics.reg.MustRegister(planeCollector{s})
	if err := s.loadClients(); err != nil {
		return nil, err
	}
	store, err := NewStore(cfg.ProfilesDir, s.log)
	if err != nil {
		return nil, &ConfigError{Flag: "profiles", Reason: err.Error()}
	}
	s.store = store
	if len(store.Profiles()) == 0 {
		s.log.Warn("no profile loaded: every run will be refused until a valid profile appears (plimsoll-run profiles check names each refusal)",
			"dir", absDir(cfg.ProfilesDir))
	}
	if err := store.Watch(s.runsCtx); err != nil {
		return nil, err
	}
	if err := s.openAudit(); err != nil {
		s.cancel()
		return nil, err
	}
	rt, err := host.New(ctx, host.Options{CacheDir: cfg.CacheDir, Getenv: cfg.Getenv, Transport: cfg.Transport,
		MaxConcurrent: cfg.MaxRuns, PoolSize: cfg.PoolSize})
	if err != nil {
		s.close()
		return nil, err
	}
	s.rt = rt
	s.metrics.reg.MustRegister(limitsCollector{s}) // limits.go
	return s, nil
}

// absDir names dir as the operator can find it, whatever the daemon's working directory.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func (s *Server) loadClients() error {
	if s.cfg.ClientsFile == "" {
		s.log.Warn("open mode: no --clients, so every local caller may use every profile", "listen", s.cfg.Listen)
		return nil
	}
	cs, err := LoadClients(s.cfg.ClientsFile, s.cfg.Getenv)
	if err != nil {
		return err
	}
	s.clients = cs
	return nil
}

// openAudit opens the audit file and its journal, and audits the runs a crash left behind.
func (s *Server) openAudit() error {
	if s.cfg.AuditFile == "" {
		s.audit = auditlog.Stream(s.cfg.AuditOut)
		s.log.Warn("no --audit file: audit lines go to stdout, unsynced, and runs are not journaled")
		return nil
	}
	a, err := auditlog.Open(s.cfg.AuditFile)
	if err != nil {
		return &ConfigError{Flag: "audit", Reason: err.Error()}
	}
	s.audit = a
	jpath := s.cfg.AuditFile + ".journal"
	n, rep, err := recoverJournal(jpath, s.cfg.AuditFile, a)
	s.reportRecovery(rep, jpath)
	if err != nil {
		return fmt.Errorf("recover the run journal %s: %w", jpath, err)
	}
	if n > 0 {
		s.metrics.interrupted.Add(float64(n))
		s.log.Warn("audited runs a previous daemon left unfinished", "interrupted", n, "journal", jpath)
	}
	s.journal, err = openJournal(jpath)
	return err
}

func (s *Server) listen() (api, admin net.Listener, err error) {
	api, err = net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, nil, &ConfigError{Flag: "listen", Reason: err.Error()}
	}
	if s.cfg.Admin == "off" {
		return api, nil, nil
	}
	admin, err = net.Listen("tcp", s.cfg.Admin)
	if err != nil {
		api.Close()
		return nil, nil, &ConfigError{Flag: "admin", Reason: err.Error()}
	}
	return api, admin, nil
}

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

func (s *Server) serve(l net.Listener, h http.Handler) *http.Server {
	if l == nil {
		return nil
	}
	// ReadTimeout bounds headers and body together: a body that trickles in or stops half-way
	// holds its handler (and a drain) at most BodyTimeout. Writes have their own deadlines
	// (clientwrite.go); a long run is not bounded here.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: s.cfg.BodyTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("listener stopped", "addr", l.Addr().String(), "error", err.Error())
		}
	}()
	s.log.Info("listening", "addr", l.Addr().String())
	return srv
}

// warm compiles the JS engine by running a trivial tool; the daemon is ready after it.
func (s *Server) warm(ctx context.Context) {
	p := &profiles.Profile{Name: "plimsoll-warmup", BaseURL: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}, Limits: profiles.DefaultLimits}
	t0 := time.Now()
	res := s.rt.Run(ctx, host.JSTool("warmup.js", "return 1"), p, nil)
	if res.Err != nil {
		s.log.Error("the JS engine did not start: the daemon stays not ready", "error", res.Audit.Error)
		return
	}
	s.ready.Store(!s.draining.Load())
	s.log.Info("ready", "warmup_ms", time.Since(t0).Milliseconds(), "profiles", len(s.store.Profiles()))
	// Python runs wait for the interpreter's first start (seconds on an empty cache); start it now,
	// without holding readiness for it.
	t0 = time.Now()
	if err := s.rt.PreparePython(); err != nil {
		s.log.Error("the Python interpreter did not start: Python runs will fail", "error", err.Error())
		return
	}
	s.log.Info("python ready", "start_ms", time.Since(t0).Milliseconds())
}

// drain stops taking runs, lets in-flight ones finish within Drain, cancels the rest, and waits
// for their answers (each after its audit line is synced).
func (s *Server) drain(servers ...*http.Server) error {
	t0 := time.Now()
	s.draining.Store(true)
	s.ready.Store(false)
	for _, srv := range servers {
		if srv != nil {
			srv.SetKeepAlivesEnabled(false)
		}
	}
	live := s.adm.Stats()
	s.log.Info("draining", "live", live.Live, "waiting", live.Waiting, "drain", s.cfg.Drain.String())
	done := s.runs.drain()
	select {
	case <-done:
	case <-time.After(s.cfg.Drain):
		s.log.Warn("drain deadline passed: cancelling the runs still in flight", "live", s.adm.Stats().Live)
		s.cancel()
		s.awaitOrClose(done, servers) // a stalled client cannot hold the drain past DrainGrace
	}
	s.cancel()
	s.closeMCP() // an MCP session's open stream would otherwise hold Shutdown to its deadline
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, srv := range servers {
		if srv != nil && srv.Shutdown(ctx) != nil { // handlers are done; this closes the listeners and idle connections
			srv.Close() // a connection still sending its headers or body is closed
		}
	}
	s.log.Info("drained", "took_ms", time.Since(t0).Milliseconds())
	return nil
}

// shutdownGrace bounds the last step of a drain, once every handler is done: connections still
// sending their headers or body are closed after it.
const shutdownGrace = 100 * time.Millisecond

// awaitOrClose waits three quarters of DrainGrace for the cancelled runs' handlers to answer,
// then closes every connection (a handler writing to or reading from a stalled client then fails
// at once) and waits for them: the last quarter is for them to return.
func (s *Server) awaitOrClose(done <-chan struct{}, servers []*http.Server) {
	select {
	case <-done:
		return
	case <-time.After(DrainGrace * 3 / 4):
	}
	s.log.Warn("closing the connections of clients still holding a handler after the drain deadline")
	for _, srv := range servers {
		if srv != nil {
			srv.Close()
		}
	}
	<-done
}

func (s *Server) close() {
	s.cancel()
	if s.rt != nil {
		s.rt.Close(context.Background())
	}
	if err := s.tracing.shutdown(context.Background()); err != nil {
		s.log.Error("export the last spans", "error", err.Error())
	}
	if s.journal != nil {
		if err := s.journal.Close(); err != nil {
			s.log.Error("close the run journal", "error", err.Error())
		}
	}
	if s.audit != nil {
		if err := s.audit.Close(); err != nil {
			s.log.Error("sync the audit file", "error", err.Error())
		}
	}
}
