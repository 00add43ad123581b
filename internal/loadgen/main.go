// Command loadgen compares the daemon with the library in two processes: trivial JS runs at a
// fixed concurrency, through POST /v1/runs to a daemon in a child process, and through the
// library in another child process. It reports runs/s, the CPU and the allocations per run of
// the process that ran them (the daemon's, without its client's), alternating the two for a few
// rounds. With -base, the daemon of another build of this program (the previous commit's) runs
// in each round too, so a change to the daemon is measured against its base in the same run.
//
//	go run ./internal/loadgen [-runs 3000] [-c 8] [-rounds 3] [-audit] [-base OLD] [-profile DIR]
//
// Traffic is loopback only; the whole program is bounded by -timeout.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server"
)

// figure is one side's measurement over its timed window.
type figure struct {
	Runs         int     `json:"runs"`
	PerSecond    float64 `json:"per_second"`
	CPUPerRun    int64   `json:"cpu_ns_per_run"` // the measured process's user+system CPU per run
	AllocsPerRun int64   `json:"allocs_per_run"` // its heap allocations per run (0 from a build without them)
	BytesPerRun  int64   `json:"bytes_per_run"`
}

type options struct {
	runs, conc, rounds, warm int
	audit                    bool
	base, profile            string
	timeout                  time.Duration
}

func main() {
	var o options
	role := flag.String("role", "", "internal: lib or daemon (a child process)")
	dir := flag.String("dir", "", "internal: the profile directory")
	flag.IntVar(&o.runs, "runs", 3000, "timed runs per side and round")
	flag.IntVar(&o.conc, "c", 8, "concurrent runs")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds, each library then daemon")
	flag.IntVar(&o.warm, "warm", 100, "untimed runs before each side's window")
	flag.BoolVar(&o.audit, "audit", false, "the daemon writes a synced audit file and journal (default: audit lines discarded)")
	flag.StringVar(&o.base, "base", "", "another build of this program (`FILE`) whose daemon is measured in each round too")
	flag.StringVar(&o.profile, "profile", "", "write CPU and allocation profiles of the last round's windows to `DIR` (daemon.cpu.pprof, library.cpu.pprof, *.allocs.pprof)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole program")
	flag.Parse()
	var err error
	switch *role {
	case "lib":
		err = libChild(*dir, o)
	case "daemon":
		err = daemonChild(*dir, o)
	default:
		err = parent(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// round is one round's figures; base is the zero figure without -base.
type round struct{ lib, daemon, base figure }

// parent runs the rounds and prints each round's figures and the ratios.
func parent(o options) error {
	if o.runs < 1 || o.conc < 1 || o.rounds < 1 {
		return errors.New("-runs, -c and -rounds must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "loadgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeProfile(dir); err != nil {
		return err
	}
	self, _ := os.Executable()
	var rounds []round
	for r := range o.rounds {
		prof := ""
		if r == o.rounds-1 {
			prof = o.profile
		}
		var rd round
		if rd.lib, err = runLib(ctx, self, dir, o, prof); err != nil {
			return fmt.Errorf("library round %d: %w", r+1, err)
		}
		// With a base, the two daemons take turns at going first, so neither always follows the library.
		if o.base != "" && r%2 == 0 {
			if rd.base, err = runDaemon(ctx, o.base, dir, o, ""); err != nil {
				return fmt.Errorf("base daemon round %d: %w", r+1, err)
			}
		}
		if rd.daemon, err = runDaemon(ctx, self, dir, o, prof); err != nil {
			return fmt.Errorf("daemon round %d: %w", r+1, err)
		}
		if o.base != "" && r%2 == 1 {
			if rd.base, err = runDaemon(ctx, o.base, dir, o, ""); err != nil {
				return fmt.Errorf("base daemon round %d: %w", r+1, err)
			}
		}
		rounds = append(rounds, rd)
		printRound(r+1, rd, o.base != "")
	}
	fmt.Printf("median of %d rounds, %d runs at concurrency %d: daemon/library runs/s %.2f× (goal ≥ 0.8), CPU/run %.2f× (goal ≤ 1.2)\n",
		o.rounds, o.runs, o.conc, medianOf(rounds, func(r round) float64 { return r.daemon.PerSecond / r.lib.PerSecond }),
		medianOf(rounds, func(r round) float64 { return cpuRatio(r.daemon, r.lib) }))
	if o.base != "" {
		fmt.Printf("median of %d rounds: base daemon/library CPU/run %.2f×; daemon/base daemon CPU/run %.3f×, runs/s %.3f×\n",
			o.rounds, medianOf(rounds, func(r round) float64 { return cpuRatio(r.base, r.lib) }),
			medianOf(rounds, func(r round) float64 { return cpuRatio(r.daemon, r.base) }),
			medianOf(rounds, func(r round) float64 { return r.daemon.PerSecond / r.base.PerSecond }))
	}
	return nil
}

func printRound(n int, rd round, base bool) {
	side := func(f figure) string {
		return fmt.Sprintf("%.0f runs/s, %.0f µs CPU/run, %d allocs/run (%d B)", f.PerSecond, us(f.CPUPerRun), f.AllocsPerRun, f.BytesPerRun)
	}
	fmt.Printf("round %d: library %s; daemon %s: runs/s %.2f×, CPU/run %.2f×\n",
		n, side(rd.lib), side(rd.daemon), rd.daemon.PerSecond/rd.lib.PerSecond, cpuRatio(rd.daemon, rd.lib))
	if base {
		fmt.Printf("round %d: base daemon %s: CPU/run %.2f× the library's; daemon/base CPU/run %.3f×\n",
			n, side(rd.base), cpuRatio(rd.base, rd.lib), cpuRatio(rd.daemon, rd.base))
	}
}

func cpuRatio(a, b figure) float64 { return float64(a.CPUPerRun) / float64(b.CPUPerRun) }

func us(ns int64) float64 { return float64(ns) / 1e3 }

// medianOf is the median over rounds of f.
func medianOf(rounds []round, f func(round) float64) float64 {
	v := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		v = append(v, f(r))
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// writeProfile stores the grant the runs use; no run calls out, so the base URL is never dialled.
func writeProfile(dir string) error {
	body := "base_url: http://127.0.0.1:9/api\ncredential:\n  env: LOADGEN_TOKEN\n  scheme: Bearer\nroutes:\n  - GET /*\n"
	return os.WriteFile(filepath.Join(dir, "load.yaml"), []byte(body), 0o644)
}

func getenv(k string) string {
	if k == "LOADGEN_TOKEN" {
		return "loadgen-token"
	}
	return os.Getenv(k) // PLIMSOLL_CACHE_DIR
}

// child starts bin (this program, or the -base build) in role, with the parent's flags.
func child(ctx context.Context, bin, role, dir string, o options) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, "-role", role, "-dir", dir, "-runs", fmt.Sprint(o.runs), "-c", fmt.Sprint(o.conc),
		"-warm", fmt.Sprint(o.warm), fmt.Sprintf("-audit=%t", o.audit))
	cmd.Stderr = os.Stderr
	return cmd
}

func runLib(ctx context.Context, bin, dir string, o options, profile string) (figure, error) {
	cmd := child(ctx, bin, "lib", dir, o)
	if profile != "" {
		cmd.Args = append(cmd.Args, "-profile", profile)
	}
	out, err := cmd.Output()
	if err != nil {
		return figure{}, err
	}
	var f figure
	return f, json.Unmarshal(out, &f)
}

// libChild runs the window in the library and prints its figure.
func libChild(dir string, o options) error {
	ctx := context.Background()
	rt, err := host.New(ctx, host.Options{MaxConcurrent: server.DefaultMaxRuns, PoolSize: 2, Getenv: getenv})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	p, err := profiles.Load(dir, "load")
	if err != nil {
		return err
	}
	tool := host.JSTool("t.js", "return 1")
	run := func() error { return rt.Run(ctx, tool, p, nil).Err }
	f, err := window(o, run, newMeter(o.profile, "library"))
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}

// sample is what a process has used so far.
type sample struct {
	cpu            time.Duration
	mallocs, bytes uint64
}

// newMeter samples this process; with a profile directory, the profiles cover the time from
// its first sample to its second.
func newMeter(dir, side string) func() sample {
	if dir != "" {
		runtime.MemProfileRate = 64 << 10 // finer than the default, for a window of a few seconds
	}
	calls := 0
	var cpuFile *os.File
	return func() sample {
		calls++
		if dir != "" && calls == 1 {
			writeAllocs(filepath.Join(dir, side+".allocs0.pprof"))
		}
		if cpuFile != nil && calls == 2 {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		smp := sample{cpu: processCPU(), mallocs: m.Mallocs, bytes: m.TotalAlloc}
		if dir != "" && calls == 2 {
			writeAllocs(filepath.Join(dir, side+".allocs.pprof"))
		}
		if dir != "" && calls == 1 {
			if f, err := os.Create(filepath.Join(dir, side+".cpu.pprof")); err == nil && pprof.StartCPUProfile(f) == nil {
				cpuFile = f
			}
		}
		return smp
	}
}

// writeAllocs writes the allocation profile as of a collection just made.
func writeAllocs(path string) {
	runtime.GC()
	if f, err := os.Create(path); err == nil {
		defer f.Close()
		pprof.Lookup("allocs").WriteTo(f, 0)
	}
}

// window makes o.warm untimed runs, then o.runs at o.conc, and measures them with meter.
func window(o options, run func() error, meter func() sample) (figure, error) {
	for range o.warm {
		if err := run(); err != nil {
			return figure{}, err
		}
	}
	next := make(chan struct{}, o.runs)
	for range o.runs {
		next <- struct{}{}
	}
	close(next)
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	s0, t0 := meter(), time.Now()
	for range o.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				if err := run(); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	wg.Wait()
	wall, s1 := time.Since(t0), meter()
	if first != nil {
		return figure{}, first
	}
	n := int64(o.runs)
	return figure{Runs: o.runs, PerSecond: float64(o.runs) / wall.Seconds(), CPUPerRun: int64(s1.cpu-s0.cpu) / n,
		AllocsPerRun: int64(s1.mallocs-s0.mallocs) / n, BytesPerRun: int64(s1.bytes-s0.bytes) / n}, nil
}

// runDaemon starts a daemon child of bin and drives the window over HTTP from this process; what
// is measured is the daemon's, asked of it over its stdin before and after.
func runDaemon(ctx context.Context, bin, dir string, o options, profile string) (figure, error) {
	cmd := child(ctx, bin, "daemon", dir, o)
	if profile != "" {
		cmd.Args = append(cmd.Args, "-profile", profile)
	}
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return figure{}, err
	}
	defer cmd.Wait()
	defer in.Close() // the daemon child shuts down on EOF
	out := bufio.NewScanner(outPipe)
	api, err := line(out)
	if err != nil {
		return figure{}, fmt.Errorf("daemon did not start: %w", err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conc * 2}}
	run := func() error { return post(ctx, hc, api) }
	meter := func() sample {
		fmt.Fprintln(in, "cpu")
		s, err := line(out)
		if err != nil {
			return sample{}
		}
		var smp sample
		fmt.Sscan(s, &smp.cpu, &smp.mallocs, &smp.bytes) // a build before allocations answers the CPU only
		return smp
	}
	return window(o, run, meter)
}

func line(s *bufio.Scanner) (string, error) {
	if s.Scan() {
		return s.Text(), nil
	}
	if s.Err() != nil {
		return "", s.Err()
	}
	return "", io.ErrUnexpectedEOF
}

// post makes one trivial run through POST /v1/runs and reads the whole answer.
func post(ctx context.Context, hc *http.Client, api string) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", api+"/v1/runs", strings.NewReader(`{"profile":"load","code":"return 1"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/runs: %s: %s", resp.Status, b)
	}
	return nil
}

// daemonChild serves on loopback and, once the daemon's start-up work is done (the JS engine
// warm and the Python interpreter's first start, which the daemon does in the background),
// prints its API address; it answers "cpu" on stdin with a sample of itself, and shuts down
// on EOF.
func daemonChild(dir string, o options) error {
	tmp, err := os.MkdirTemp("", "loadgen-daemon")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	started := make(chan struct{})
	cfg := server.Config{Listen: "127.0.0.1:0", Admin: "off", ProfilesDir: dir, Getenv: getenv,
		Logger: slog.New(&startWatch{Handler: slog.NewJSONHandler(io.Discard, nil), started: started}), AuditOut: io.Discard}
	if o.audit {
		cfg.AuditFile = filepath.Join(tmp, "audit.jsonl")
	}
	ready := make(chan string, 1)
	cfg.Ready = func(api, _ string) { ready <- "http://" + api }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	select {
	case api := <-ready:
		select {
		case <-started:
		case <-time.After(startWait):
			cancel()
			<-done
			return fmt.Errorf("the daemon did not log %q within %v (loadgen waits for that line of server.warm)", pythonReady, startWait)
		}
		fmt.Println(api)
	case err := <-done:
		cancel()
		return err
	}
	answer(os.Stdin, newMeter(o.profile, "daemon"))
	cancel()
	return <-done
}

// pythonReady is server.warm's line when its start-up work is done; startWait bounds the wait
// for it (the interpreter's first start takes seconds on an empty cache).
const (
	pythonReady = "python ready"
	startWait   = 2 * time.Minute
)

// startWatch closes started when the daemon logs the end of its start-up work: the Python
// interpreter started, or failed to (server.warm's two last lines).
type startWatch struct {
	slog.Handler
	started chan struct{}
	once    sync.Once
}

func (w *startWatch) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == pythonReady || strings.HasPrefix(r.Message, "the Python interpreter did not start") {
		w.once.Do(func() { close(w.started) })
	}
	return w.Handler.Handle(ctx, r)
}

// answer answers each "cpu" line with a sample: CPU nanoseconds, allocations and bytes allocated.
func answer(r io.Reader, meter func() sample) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if s.Text() == "cpu" {
			smp := meter()
			fmt.Println(int64(smp.cpu), smp.mallocs, smp.bytes)
		}
	}
}
