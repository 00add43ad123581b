package runqueue

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// fill takes every live slot and returns their releases.
func fill(t *testing.T, c *Controller, n int) []func() {
	t.Helper()
	var rel []func()
	for range n {
		r, err := c.Acquire(context.Background(), Normal)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, r)
	}
	return rel
}

// queue starts a waiter and returns the channel its answer arrives on.
func queue(c *Controller, crit Criticality) chan error {
	ch := make(chan error, 1)
	before := c.Stats().Arrived
	go func() {
		r, err := c.Acquire(context.Background(), crit)
		if r != nil {
			defer r()
		}
		ch <- err
	}()
	for c.Stats().Arrived == before { // wait until it has been queued or shed
		runtime.Gosched()
	}
	return ch
}

func TestFullQueueRefusesEqualArrival(t *testing.T) {
	c := New(1, 1)
	fill(t, c, 1)
	queue(c, Normal)
	_, err := c.Acquire(context.Background(), Normal)
	var se *ShedError
	if !errors.As(err, &se) || se.Displaced || !errors.Is(err, ErrShed) {
		t.Fatalf("want a refusal, got %v", err)
	}
}

func TestHigherArrivalDisplacesLowest(t *testing.T) {
	c := New(1, 2)
	rel := fill(t, c, 1)
	normal := queue(c, Normal)
	shed := queue(c, Sheddable)
	crit := queue(c, Critical)
	err := <-shed
	var se *ShedError
	if !errors.As(err, &se) || !se.Displaced || se.Criticality != Sheddable {
		t.Fatalf("the sheddable waiter: want displaced, got %v", err)
	}
	if s := c.Stats(); s.ByTier[Critical] != 1 || s.ByTier[Normal] != 1 {
		t.Fatalf("queue after displacement: %+v", s)
	}
	rel[0]() // the critical one goes first
	if err := <-crit; err != nil {
		t.Fatal(err)
	}
	if err := <-normal; err != nil {
		t.Fatal(err)
	}
}

func TestCriticalNeverShedWhileLowerWaits(t *testing.T) {
	c := New(2, 8)
	rel := fill(t, c, 2)
	var answers []chan error
	var crits []Criticality
	for i := range 40 {
		crit := Criticality(i % 2) // sheddable and normal overload the queue...
		if i%5 == 0 {
			crit = Critical // ...and 8 critical ones arrive among them: none may be shed
		}
		answers = append(answers, queue(c, crit))
		crits = append(crits, crit)
	}
	for _, r := range rel {
		r()
	}
	for i, ch := range answers {
		err := <-ch
		if crits[i] == Critical && err != nil {
			t.Fatalf("critical request %d was shed: %v", i, err)
		}
	}
}

func TestCanceledWaiterLeaves(t *testing.T) {
	c := New(1, 1)
	rel := fill(t, c, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := c.Acquire(ctx, Normal); done <- err }()
	for c.Stats().Waiting == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	rel[0]()
	if s := c.Stats(); s.Live != 0 || s.Waiting != 0 {
		t.Fatalf("stats after: %+v", s)
	}
}

func TestHammer(t *testing.T) {
	c := New(4, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, shed := 0, 0
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Acquire(context.Background(), Criticality(i%3))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				shed++
				return
			}
			admitted++
			r()
		}()
	}
	wg.Wait()
	if admitted+shed != 400 || c.Stats().Live != 0 {
		t.Fatalf("admitted %d shed %d stats %+v", admitted, shed, c.Stats())
	}
}

func TestParseCriticality(t *testing.T) {
	for in, want := range map[string]Criticality{"": Normal, "normal": Normal, "critical": Critical, "sheddable": Sheddable} {
		if got, err := ParseCriticality(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseCriticality("urgent"); !errors.Is(err, ErrCriticality) {
		t.Errorf("urgent: %v", err)
	}
}
