package bulkhead_test

import (
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// BenchmarkSlot is one uncontended slot taken and given back with a sample, per algorithm,
// against a buffered-channel semaphore (the cheapest fixed limit Go offers) in the same run.
func BenchmarkSlot(b *testing.B) {
	b.Run("baseline=chan-semaphore", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		for b.Loop() {
			sem <- struct{}{}
			<-sem
		}
	})
	for _, alg := range []bulkhead.Algorithm{bulkhead.Fixed, bulkhead.AIMD, bulkhead.Gradient2} {
		b.Run(string(alg), func(b *testing.B) {
			bh, err := bulkhead.New(bulkhead.Config{Algorithm: alg, Initial: 16, MaxQueue: 128})
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			for b.Loop() {
				tk := bh.Enter(now, bulkhead.Normal)
				now = now.Add(time.Millisecond)
				bh.Release(tk, now, time.Millisecond, false)
			}
		})
	}
}

// BenchmarkSlotParallel is the same under contention from every core: the bulkhead's one lock.
func BenchmarkSlotParallel(b *testing.B) {
	bh, err := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Gradient2, Min: 4096, Max: 4096, MaxQueue: 128})
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			tk := bh.Enter(now, bulkhead.Normal)
			bh.Release(tk, now, time.Millisecond, false)
		}
	})
}
