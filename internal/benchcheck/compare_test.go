package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJudgeTakesTheMedianOfSameRoundRatios(t *testing.T) {
	r := rounds{}
	// One noisy round (the base's 3rd ran on a busy machine) does not decide the verdict.
	for _, v := range []float64{100, 110, 400, 105, 95} {
		r.add("base", []measurement{{"BenchmarkA", "ns/op", v}})
	}
	for _, v := range []float64{300, 330, 100, 315, 285} {
		r.add("head", []measurement{{"BenchmarkA", "ns/op", v}, {"BenchmarkNew", "ns/op", 1}})
	}
	r.add("base", []measurement{{"BenchmarkGone", "ns/op", 1}, {"BenchmarkMetric", "ns/op", 1}})
	r.add("head", []measurement{{"BenchmarkMetric", "cpu-ns/call", 5}})

	vs := r.judge()
	assert.Len(t, vs, 4)
	assert.Equal(t, "BenchmarkA", vs[0].name)
	assert.InDelta(t, 3.0, vs[0].ratio, 1e-9)
	assert.Equal(t, "removed by the change", vs[1].note)
	assert.Equal(t, "not judged: the sides report different metrics (ns/op, cpu-ns/call)", vs[2].note)
	assert.Equal(t, "new: no baseline", vs[3].note)

	text, regressed := report(vs, 2)
	assert.Equal(t, []string{"BenchmarkA"}, regressed)
	assert.Contains(t, text, "REGRESSED")
	_, regressed = report(vs, 3.5)
	assert.Empty(t, regressed)
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 0.0, median(nil))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}
