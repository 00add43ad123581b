package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server"
)

// The figures of issue 20 (BENCHMARKS.md), each with its baseline in the same run.
// Run: PLIMSOLL_FIGURES=1 go test -run 'TestHostileFigures' -v ./server

func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// TestHostileFiguresMCPInitializeFlood: the heap after 1,000 initializes from one client (16
// served, the rest refused at the cap) against the heap after the 16 alone.
func TestHostileFiguresMCPInitializeFlood(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	up := newUpstream(t)
	d := start(t, up)
	initialize := func() int {
		resp, _ := d.do("POST", "/mcp", tokenA, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`,
			"Accept", "application/json, text/event-stream")
		return resp.StatusCode
	}
	h0 := heapMiB()
	codes := map[int]int{}
	for range server.MCPSessionsPerClient {
		codes[initialize()]++
	}
	h16 := heapMiB()
	for range 1000 - server.MCPSessionsPerClient {
		codes[initialize()]++
	}
	h1000 := heapMiB()
	t.Logf("1,000 MCP initializes from one client: answers %v; heap +%.2f MiB after the first %d (the cap), +%.2f MiB after all 1,000 (%.2f× the cap's)",
		codes, h16-h0, server.MCPSessionsPerClient, h1000-h0, (h1000-h0)/max(h16-h0, 0.01))
}

// TestHostileFiguresDrain: drain time with 50 stalled readers (unread NDJSON streams of held
// runs) and 50 stalled writers (bodies stopped half-way), against 50 well-behaved clients with
// held runs, each with --drain 2s; the goal is --drain + 1 s.
func TestHostileFiguresDrain(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	const n, drain = 50, 2 * time.Second
	held := `for (let i = 0; i < 25; i++) console.log("x".repeat(80000)); await api.get("/block"); return 1` // 2 MiB of log
	measure := func(stalled bool) (time.Duration, int) {
		up := newUpstream(t)
		d := start(t, up, chatty(t, up), func(c *server.Config) { c.Drain, c.MaxRuns, c.Queue = drain, 2*n, 2*n })
		var wg sync.WaitGroup
		var lost atomic.Int64 // well-behaved clients whose connection was closed before their answer
		for range n {
			if stalled {
				r := rawPost(t, d, server.MediaNDJSON, fmt.Sprintf(`{"profile":"chatty","code":%q}`, held))
				r.(*net.TCPConn).SetReadBuffer(4 << 10) // the kernel holds little of what it does not read
				conn, err := net.Dial("tcp", strings.TrimPrefix(d.api, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", tokenB)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", d.api+"/v1/runs", strings.NewReader(fmt.Sprintf(`{"profile":"chatty","code":%q}`, held)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tokenB)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					lost.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		up.waitArrived(t, n)
		t0 := time.Now()
		if err := d.shutdown(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(t0)
		wg.Wait()
		return took, int(lost.Load())
	}
	for round := range 2 {
		good, lost := measure(false)
		bad, _ := measure(true)
		t.Logf("round %d: drain (--drain %s) with %d well-behaved clients %s (%d answers lost); with %d stalled readers + %d stalled writers %s (%.2f×)",
			round, drain, n, good.Round(10*time.Millisecond), lost, n, n, bad.Round(10*time.Millisecond), bad.Seconds()/good.Seconds())
	}
}
