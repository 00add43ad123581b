package server

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestHostileFiguresRing: the heap of a full recent ring, filled with 2,000 runs whose answers
// hold 1 MiB of output and 256 KiB of log each (2.5 GiB unbounded), against an empty one.
// Run: PLIMSOLL_FIGURES=1 go test -run TestHostileFiguresRing -v ./server
func TestHostileFiguresRing(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	r := newRing(DefaultRecentRuns)
	h0 := heap()
	out, _ := json.Marshal(strings.Repeat("o", 1<<20))
	log := strings.Repeat("l", 256<<10)
	for i := range 2000 {
		a := runAnswer{RunID: fmt.Sprint(i), Output: out, Log: log}
		r.put(fmt.Sprintf("run-%d", i), fmt.Sprintf("client-%d", i%4), a, answerSize(a))
	}
	h := heap()
	r.mu.Lock()
	runs, counted := len(r.byID), r.bytes
	r.mu.Unlock()
	t.Logf("full ring: %d runs kept of 2,000, %.1f MiB counted (budget %d MiB), heap +%.1f MiB over the empty ring",
		runs, float64(counted)/(1<<20), RecentBytes>>20, h-h0)
}
