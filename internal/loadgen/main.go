// Command loadgen compares the daemon with the library in two processes: trivial JS runs at a
// fixed concurrency, through POST /v1/runs to a daemon in a child process, and through the
// library in another child process. It reports runs/s and the CPU per run of the process that
// ran them (the daemon's, without its client's), alternating the two for a few rounds.
//
//	go run ./internal/loadgen [-runs 3000] [-c 8] [-rounds 2] [-audit] [-cpuprofile daemon.pprof]
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
	Runs      int     `json:"runs"`
	PerSecond float64 `json:"per_second"`
	CPUPerRun int64   `json:"cpu_ns_per_run"` // the measured process's user+system CPU per run
}

type options struct {
	runs, conc, rounds, warm int
	audit                    bool
	cpuprofile               string
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
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write the daemon's CPU profile of the last round's window to `FILE`")
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
	var libs, daemons []figure
	for r := range o.rounds {
		lf, err := runLib(ctx, dir, o)
		if err != nil {
			return fmt.Errorf("library round %d: %w", r+1, err)
		}
		prof := ""
		if r == o.rounds-1 {
			prof = o.cpuprofile
		}
		df, err := runDaemon(ctx, dir, o, prof)
		if err != nil {
			return fmt.Errorf("daemon round %d: %w", r+1, err)
		}
		libs, daemons = append(libs, lf), append(daemons, df)
		fmt.Printf("round %d: library %.0f runs/s, %.0f µs CPU/run; daemon %.0f runs/s, %.0f µs CPU/run: runs/s %.2f×, CPU/run %.2f×\n",
			r+1, lf.PerSecond, us(lf.CPUPerRun), df.PerSecond, us(df.CPUPerRun), df.PerSecond/lf.PerSecond, float64(df.CPUPerRun)/float64(lf.CPUPerRun))
	}
	rate, cpu := ratios(libs, daemons)
	fmt.Printf("median of %d rounds, %d runs at concurrency %d: daemon/library runs/s %.2f× (goal ≥ 0.8), CPU/run %.2f× (goal ≤ 1.2)\n",
		o.rounds, o.runs, o.conc, rate, cpu)
	return nil
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// ratios is the median, over rounds, of daemon/library runs/s and CPU per run.
func ratios(libs, daemons []figure) (rate, cpu float64) {
	var rs, cs []float64
	for i := range libs {
		rs = append(rs, daemons[i].PerSecond/libs[i].PerSecond)
		cs = append(cs, float64(daemons[i].CPUPerRun)/float64(libs[i].CPUPerRun))
	}
	return median(rs), median(cs)
}

func median(v []float64) float64 {
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

// child starts this program again in role, with the parent's flags.
func child(ctx context.Context, role, dir string, o options) *exec.Cmd {
	self, _ := os.Executable()
	cmd := exec.CommandContext(ctx, self, "-role", role, "-dir", dir, "-runs", fmt.Sprint(o.runs), "-c", fmt.Sprint(o.conc),
		"-warm", fmt.Sprint(o.warm), fmt.Sprintf("-audit=%t", o.audit))
	cmd.Stderr = os.Stderr
	return cmd
}

func runLib(ctx context.Context, dir string, o options) (figure, error) {
	out, err := child(ctx, "lib", dir, o).Output()
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
	f, err := window(o, run, processCPU)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}

// window makes o.warm untimed runs, then o.runs at o.conc, and measures them with cpu.
func window(o options, run func() error, cpu func() time.Duration) (figure, error) {
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
	c0, t0 := cpu(), time.Now()
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
	wall, used := time.Since(t0), cpu()-c0
	if first != nil {
		return figure{}, first
	}
	return figure{Runs: o.runs, PerSecond: float64(o.runs) / wall.Seconds(), CPUPerRun: int64(used) / int64(o.runs)}, nil
}

// runDaemon starts a daemon child and drives the window over HTTP from this process; the CPU
// measured is the daemon's, asked of it over its stdin before and after.
func runDaemon(ctx context.Context, dir string, o options, cpuprofile string) (figure, error) {
	cmd := child(ctx, "daemon", dir, o)
	if cpuprofile != "" {
		cmd.Args = append(cmd.Args, "-cpuprofile", cpuprofile)
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
	daemonCPU := func() time.Duration {
		fmt.Fprintln(in, "cpu")
		s, err := line(out)
		if err != nil {
			return 0
		}
		var ns int64
		fmt.Sscan(s, &ns)
		return time.Duration(ns)
	}
	return window(o, run, daemonCPU)
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

// daemonChild serves on loopback, prints its API address, answers "cpu" on stdin with its CPU
// time in nanoseconds (a CPU profile runs between the first and the second), and shuts down
// on EOF.
func daemonChild(dir string, o options) error {
	tmp, err := os.MkdirTemp("", "loadgen-daemon")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg := server.Config{Listen: "127.0.0.1:0", Admin: "off", ProfilesDir: dir, Getenv: getenv,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), AuditOut: io.Discard}
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
		fmt.Println(api)
	case err := <-done:
		cancel()
		return err
	}
	answerCPU(os.Stdin, cpuprofileFlag())
	cancel()
	return <-done
}

func cpuprofileFlag() string {
	if f := flag.Lookup("cpuprofile"); f != nil {
		return f.Value.String()
	}
	return ""
}

// answerCPU answers each "cpu" line with the process's CPU time; with a profile file, the
// profile covers the time from the first answer to the second.
func answerCPU(r io.Reader, profile string) {
	s := bufio.NewScanner(r)
	asked := 0
	for s.Scan() {
		if s.Text() != "cpu" {
			continue
		}
		asked++
		if profile != "" && asked == 2 {
			pprof.StopCPUProfile()
		}
		fmt.Println(int64(processCPU()))
		if profile != "" && asked == 1 {
			if f, err := os.Create(profile); err == nil {
				defer f.Close()
				pprof.StartCPUProfile(f)
			}
		}
	}
}
