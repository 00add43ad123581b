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
	"github.com/plimsoll/plimsoll/server/mcpserver"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// Server is the daemon as a value a process can embed, as net/http's Server: New builds it,
// Handler and AdminHandler answer the API (with MCP at /mcp) and the admin plane, Serve and
// ServeAdmin answer them on a listener, and Shutdown drains the runs and syncs every audit line.
// Run is New, two listeners and Shutdown when its context ends.
type Server struct {
	cfg     Config
	log     *slog.Logger
	rt      *host.Runtime
	store   *profileStore
	clients *Clients // nil in open mode
	adm     *runqueue.Controller
	audit   *auditlog.File
	journal *journal // nil without an audit file
	metrics *metrics
	recent  *ring
	plane   *controlPlane     // live runs, forced-open flags, the admin token (admin.go, controlplane.go)
	mcp     *mcpserver.Server // /mcp on the API listener; set by apiHandler
	tracing *tracing          // OpenTelemetry spans; nil when OTEL_* does not ask for them (otel.go)
	fleet   *fleet.Fleet      // nil without Config.Fleet (fleetlink.go)
	quotas  *quotas           // the clients' quotas (quota.go)

	api, admin http.Handler // Handler and AdminHandler, built once by New

	ready    atomic.Bool
	draining atomic.Bool
	runsCtx  context.Context // ends when the drain deadline passes: in-flight runs are cancelled
	cancel   context.CancelFunc
	runs     inflight     // run requests past the drain check, until their answer is written
	detached detachedRuns // runs started with "wait": false, until they end (detached.go)

	serving      listening // the http.Servers Serve and ServeAdmin started, for Shutdown
	shutdownOnce sync.Once
	shutdownErr  error
}

// listening holds the http.Servers that Serve and ServeAdmin started; once Shutdown has taken
// them, a later Serve is refused, so no listener outlives the drain.
type listening struct {
	mu      sync.Mutex
	closed  bool
	servers []*http.Server
}

// add records srv; false once Shutdown has begun.
func (l *listening) add(srv *http.Server) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.servers = append(l.servers, srv)
	return true
}

// close refuses later adds and returns the servers started so far.
func (l *listening) close() []*http.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.servers
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
	s, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	api, admin, err := s.listen()
	if err != nil {
		s.release() // logs a sync failure; the refused listener is the error to return
		return err
	}
	if s.cfg.Ready != nil {
		s.cfg.Ready(addrOf(api), addrOf(admin))
	}
	go s.logServe(api, s.Serve)
	if admin != nil {
		go s.logServe(admin, s.ServeAdmin)
	}
	<-ctx.Done()
	return s.Shutdown(context.Background()) // cfg.Drain bounds the drain
}

// New builds a Server from cfg: it loads the profiles and clients, opens the audit file (auditing
// the runs a crashed daemon left unfinished), starts the engine, and joins the fleet when cfg
// says so. ctx bounds that setup only. The engine warms in the background; /readyz says when it
// is done. Config.Listen, Admin and Ready are Run's: a Server serves wherever it is given a
// listener or mounted. It returns a *ConfigError or *ClientsError when the configuration is
// refused.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s, err := newServer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.joinFleet(ctx); err != nil {
		s.close()
		return nil, err
	}
	s.api, s.admin = s.apiHandler(), s.adminHandler()
	go s.warm(s.runsCtx)
	return s, nil
}

// Handler answers the API: /v1, MCP at /mcp, /livez, /readyz and /metrics. Mount it at the root
// of a mux or listener; its routes are absolute.
func (s *Server) Handler() http.Handler { return s.api }

// AdminHandler answers the admin plane (/admin, the operator page, /metrics with the
// per-profile series). Serve it only where the operator alone can reach it; with
// Config.AdminTokenEnv every /admin request needs the admin token.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// Serve answers Handler on l until Shutdown, and then returns http.ErrServerClosed. Without
// Config.ClientsFile it refuses (a *ConfigError, l closed) a listener that is not on loopback,
// as Run refuses such a Config.Listen.
func (s *Server) Serve(l net.Listener) error {
	if s.clients == nil && !loopbackListener(l) {
		l.Close()
		return &ConfigError{Flag: "listen", Reason: l.Addr().String() + " is not a loopback address: without clients the daemon is open to anyone who can connect, so it serves only on loopback"}
	}
	return s.serve(l, s.api)
}

// ServeAdmin answers AdminHandler on l until Shutdown, and then returns http.ErrServerClosed.
// Without Config.AdminTokenEnv it refuses (a *ConfigError, l closed) a listener that is not on
// loopback, as Run refuses such a Config.Admin.
func (s *Server) ServeAdmin(l net.Listener) error {
	if s.plane.adminToken == nil && !loopbackListener(l) {
		l.Close()
		return &ConfigError{Flag: "admin", Reason: l.Addr().String() + " is not a loopback address: the admin plane has no authentication without an admin token"}
	}
	return s.serve(l, s.admin)
}

// Shutdown drains: readiness fails, new runs get 503, in-flight runs have Config.Drain (or until
// ctx ends, if sooner) to finish before they are cancelled, and every run's audit line is written
// once and synced before it returns. It closes the listeners Serve and ServeAdmin took, the open
// MCP sessions, the engine and the audit file; connections to a Handler mounted elsewhere are
// the embedding server's to close. It returns an error only when the audit file or its journal
// could not be synced and closed. Later calls wait for the first and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.drain(ctx)
		s.shutdownErr = s.release()
	})
	return s.shutdownErr
}

func newServer(ctx context.Context, cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Logger, adm: runqueue.New(cfg.MaxRuns, cfg.Queue), recent: newRing(cfg.RecentRuns)}
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
	store, err := newProfileStore(cfg.ProfilesDir, s.log)
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
	cs, err := readClients(s.cfg.ClientsFile, s.cfg.Getenv)
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

// loopbackListener says whether only this machine can connect to l: a loopback address, or a
// Unix socket.
func loopbackListener(l net.Listener) bool {
	return l.Addr().Network() == "unix" || isLoopback(l.Addr().String())
}

func (s *Server) serve(l net.Listener, h http.Handler) error {
	// ReadTimeout bounds headers and body together: a body that trickles in or stops half-way
	// holds its handler (and a drain) at most BodyTimeout. Writes have their own deadlines
	// (clientwrite.go); a long run is not bounded here.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: s.cfg.BodyTimeout, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	if !s.serving.add(srv) {
		l.Close()
		return http.ErrServerClosed
	}
	s.log.Info("listening", "addr", l.Addr().String())
	return srv.Serve(l)
}

// logServe runs serve and logs why it stopped, unless Shutdown stopped it.
func (s *Server) logServe(l net.Listener, serve func(net.Listener) error) {
	if err := serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("listener stopped", "addr", l.Addr().String(), "error", err.Error())
	}
}

// warm compiles the JS engine by running a trivial tool; the daemon is ready after it.
func (s *Server) warm(ctx context.Context) {
	p := &profiles.Profile{Name: "plimsoll-warmup", BaseURL: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}, Limits: profiles.DefaultLimits}
	t0 := time.Now()
	res := s.rt.Run(ctx, host.JSTool("warmup.js", "return 1"), p, nil)
	if res.Err != nil {
		if ctx.Err() == nil { // else the Server was shut down before the engine was warm
			s.log.Error("the JS engine did not start: the daemon stays not ready", "error", res.Audit.Error)
		}
		return
	}
	s.ready.Store(!s.draining.Load())
	s.log.Info("ready", "warmup_ms", time.Since(t0).Milliseconds(), "profiles", len(s.store.Profiles()))
	// Python runs wait for the interpreter's first start (seconds on an empty cache); start it now,
	// without holding readiness for it.
	t0 = time.Now()
	if err := s.rt.PreparePython(); err != nil {
		if errors.Is(err, host.ErrClosed) {
			return // shut down first
		}
		s.log.Error("the Python interpreter did not start: Python runs will fail", "error", err.Error())
		return
	}
	s.log.Info("python ready", "start_ms", time.Since(t0).Milliseconds())
	s.warmPreambles(ctx)
}

// warmPreambles evaluates every served profile's clients (specgen's JS and Python preambles)
// once in the background, so no profile's first run pays for it; a profile whose preamble
// cannot be read is named in the log and left to its runs, which report it.
func (s *Server) warmPreambles(ctx context.Context) {
	t0 := time.Now()
	for _, p := range s.store.Profiles() {
		if err := s.rt.PreparePreambles(ctx, p); err != nil {
			if errors.Is(err, host.ErrClosed) || ctx.Err() != nil {
				return // shut down first
			}
			s.log.Warn("a profile's client was not preloaded: its runs evaluate it", "profile", p.Name, "error", err.Error())
		}
	}
	s.log.Info("clients preloaded", "profiles", len(s.store.Profiles()), "ms", time.Since(t0).Milliseconds())
}

// drain stops taking runs, lets in-flight ones finish within Drain (or until ctx ends), cancels
// the rest, and waits for their answers (each after its audit line is synced).
func (s *Server) drain(ctx context.Context) {
	t0 := time.Now()
	servers := s.serving.close()
	s.draining.Store(true)
	s.ready.Store(false)
	for _, srv := range servers {
		srv.SetKeepAlivesEnabled(false)
	}
	live := s.adm.Stats()
	s.log.Info("draining", "live", live.Live, "waiting", live.Waiting, "drain", s.cfg.Drain.String())
	done := s.runs.drain()
	deadline := time.NewTimer(s.cfg.Drain)
	defer deadline.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("shutdown's context ended: cancelling the runs still in flight", "live", s.adm.Stats().Live)
		s.cancel()
		s.awaitOrClose(done, servers)
	case <-deadline.C:
		s.log.Warn("drain deadline passed: cancelling the runs still in flight", "live", s.adm.Stats().Live)
		s.cancel()
		s.awaitOrClose(done, servers) // a stalled client cannot hold the drain past DrainGrace
	}
	s.cancel()
	s.closeMCP() // an MCP session's open stream would otherwise hold Shutdown to its deadline
	grace, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(grace) != nil { // handlers are done; this closes the listeners and idle connections
			srv.Close() // a connection still sending its headers or body is closed
		}
	}
	s.log.Info("drained", "took_ms", time.Since(t0).Milliseconds())
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
		srv.Close()
	}
	<-done
}

// release leaves the fleet and closes what New opened.
func (s *Server) release() error {
	s.leaveFleet()
	return s.close()
}

// close releases the engine, the tracer and the audit file; the error is the audit file's or
// its journal's: a line that may not be on disk.
func (s *Server) close() error {
	s.cancel()
	if s.rt != nil {
		s.rt.Close(context.Background())
	}
	if err := s.tracing.shutdown(context.Background()); err != nil {
		s.log.Error("export the last spans", "error", err.Error())
	}
	var errs []error
	if s.journal != nil {
		if err := s.journal.Close(); err != nil {
			s.log.Error("close the run journal", "error", err.Error())
			errs = append(errs, fmt.Errorf("close the run journal: %w", err))
		}
	}
	if s.audit != nil {
		if err := s.audit.Close(); err != nil {
			s.log.Error("sync the audit file", "error", err.Error())
			errs = append(errs, fmt.Errorf("sync the audit file: %w", err))
		}
	}
	return errors.Join(errs...)
}
