package quickjs_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

// TestRemainderIsExact: the engine's x % y on numbers (whose integral fast path is our patch
// 003) is the exact IEEE remainder, bit for bit Go's math.Mod: signed zeros, NaN, infinities,
// integral values on both sides of 2^31 and 2^53, fractions and the extremes, plus random
// integral pairs. Values cross as their bit patterns, which JSON cannot carry otherwise.
func TestRemainderIsExact(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 1, -1, 2, 3, -5, 7.5, -0.5, 1e-300, 5e-324, -5e-324,
		1<<31 - 1, 1 << 31, -(1 << 31), 1000003, -1000003, 999993000049, 1 << 52, 1<<52 + 1, 1<<53 - 1,
		-(1<<53 - 1), 1 << 53, 1<<53 + 2, -(1<<53 + 2), 1 << 63, 1e300, -1e300, math.MaxFloat64,
		math.Inf(1), math.Inf(-1), math.NaN()}
	var xs, ys []float64
	for _, x := range special {
		for _, y := range special {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	rng := rand.New(rand.NewPCG(24, 31))
	for range 2000 { // integral pairs of every magnitude up to 2^60, either sign
		x := math.Trunc(math.Ldexp(rng.Float64(), rng.IntN(61))) * float64(1-2*rng.IntN(2))
		y := math.Trunc(math.Ldexp(rng.Float64(), rng.IntN(55))) * float64(1-2*rng.IntN(2))
		xs, ys = append(xs, x), append(ys, y)
	}
	tool := `const dv = new DataView(new ArrayBuffer(8));
const num = (h) => { dv.setBigUint64(0, BigInt("0x" + h)); return dv.getFloat64(0); };
const bits = (v) => { dv.setFloat64(0, v); return dv.getBigUint64(0).toString(16); };
return input.xs.map((x, i) => bits(num(x) % num(input.ys[i])));`
	r := runTool(t, nil, runInput{Tool: tool, Input: map[string]any{"xs": hexBits(xs), "ys": hexBits(ys)}})
	require.Equal(t, int(abi.ExitOK), int(r.code), r)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, len(xs))
	for i, h := range got {
		b, err := strconv.ParseUint(h, 16, 64)
		require.NoError(t, err)
		v, want := math.Float64frombits(b), math.Mod(xs[i], ys[i])
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(v), "%v %% %v = %v, want NaN", xs[i], ys[i], v)
			continue
		}
		require.Equal(t, math.Float64bits(want), b, "%v %% %v = %v, want %v", xs[i], ys[i], v, want)
	}
}

func hexBits(vs []float64) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.FormatUint(math.Float64bits(v), 16)
	}
	return out
}
