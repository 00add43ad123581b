package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Status line timing: shown once a run has lasted statusAfter, redrawn every statusEvery.
const (
	statusAfter = time.Second
	statusEvery = 200 * time.Millisecond
)

// eraseLine returns to the line's start and clears it (ANSI), so the line is redrawn in place.
const eraseLine = "\r\x1b[K"

// statusLine shows a running run on a terminal's stderr: elapsed time, calls forwarded, shed and
// denied, and the breaker, redrawn in place, and erased when the run ends.
type statusLine struct {
	w     io.Writer
	after time.Duration

	mu    sync.Mutex
	state func() broker.State // nil until the run's broker exists
	drawn bool
}

func (s *statusLine) started(state func() broker.State) {
	s.mu.Lock()
	s.state = state
	s.mu.Unlock()
}

// tick redraws the line, once the run has lasted long enough to be worth one.
func (s *statusLine) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return
	}
	st := s.state()
	if time.Duration(st.ElapsedMs)*time.Millisecond < s.after {
		return
	}
	c := st.Counters
	fmt.Fprintf(s.w, "%splimsoll-run: %.1fs, calls %d forwarded, %d shed, %d denied, breaker %s",
		eraseLine, float64(st.ElapsedMs)/1000, c.Forwarded, c.Shed, c.Denied, st.Breaker)
	s.drawn = true
}

// end erases the line, so what the run prints next starts on a clean line.
func (s *statusLine) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn {
		fmt.Fprint(s.w, eraseLine)
	}
	s.state, s.drawn = nil, false
}

// runShowing runs the tool; on a terminal's stderr it shows the status line while the run lasts.
func runShowing(ctx context.Context, rt *host.Runtime, tool host.Tool, p *profiles.Profile, input []byte, e env) host.Result {
	if !e.stderrTTY {
		return rt.Run(ctx, tool, p, input)
	}
	s := &statusLine{w: e.stderr, after: statusAfter}
	ticker := time.NewTicker(statusEvery)
	defer ticker.Stop()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ticker.C:
				s.tick()
			case <-done:
				return
			}
		}
	}()
	res := rt.RunWith(ctx, tool, p, input, host.RunOptions{OnStart: s.started})
	close(done)
	wg.Wait()
	s.end()
	return res
}
