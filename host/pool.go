package host

import (
	"context"
	"time"
)

// pool keeps instances that are ready to run (initialised, never used) for one kind of guest.
// Each serves one run and is then closed; a goroutine makes the next.
type pool struct {
	ready    chan *instance
	stopFill context.CancelFunc
	done     chan struct{}
}

// startPool starts filling a pool of size instances made by prepare. An instance that fails to
// start stops the filling: runs then start fresh instances and report the error themselves.
func (rt *Runtime) startPool(size int, prepare func(context.Context) (*instance, error)) *pool {
	ctx, stop := context.WithCancel(context.Background())
	p := &pool{ready: make(chan *instance, size), stopFill: stop, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for rt.yieldToRuns(ctx) {
			inst, err := prepare(ctx)
			if err != nil {
				return
			}
			select {
			case p.ready <- inst:
			case <-ctx.Done():
				inst.close(context.Background())
				return
			}
		}
	}()
	return p
}

// take returns a ready instance that fits under memLimit, or nil.
func (p *pool) take(memLimit uint64) *instance {
	select {
	case inst := <-p.ready:
		if uint64(inst.mod.Memory().Size()) <= memLimit {
			return inst
		}
		// Already bigger than this profile allows: keep it for another run.
		select {
		case p.ready <- inst:
		default:
			inst.close(context.Background())
		}
	default:
	}
	return nil
}

// stop ends the filling and closes the instances still waiting.
func (p *pool) stop(ctx context.Context) {
	p.stopFill()
	<-p.done
	for {
		select {
		case inst := <-p.ready:
			inst.close(ctx)
		default:
			return
		}
	}
}

// fillYield bounds how long a pool's filler waits for executing runs to finish.
const fillYield = 10 * time.Millisecond

// yieldToRuns waits, for at most fillYield, until no run is executing, so that preparing the next
// pooled instance does not compete with a run for the CPU (on a small machine that made pooled
// runs about 0.8 ms slower). It returns false when ctx is done.
func (rt *Runtime) yieldToRuns(ctx context.Context) bool {
	select { // a token left from an earlier quiet moment says nothing about now
	case <-rt.idle:
	default:
	}
	deadline := time.Now().Add(fillYield)
	for rt.executing.Load() > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-rt.idle:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
	return ctx.Err() == nil
}
