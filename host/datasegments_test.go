package host

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/internal/wasmbin"
)

// TestCoalesceData checks that merging data segments leaves a module's memory after
// instantiation byte for byte the same, with far fewer segments.
func TestCoalesceData(t *testing.T) {
	ctx := context.Background()
	for name, bin := range map[string][]byte{"js": jsguest.Wasm(), "testguest": testguest.Wasm()} {
		t.Run(name, func(t *testing.T) {
			merged := coalesceData(bin)
			before, after := countData(t, bin), countData(t, merged)
			t.Logf("data segments: %d -> %d", before, after)
			if before >= 100 { // goja's Go module has thousands; clang's a handful
				require.Less(t, after, before/10)
			} else {
				require.LessOrEqual(t, after, before)
			}
			require.Equal(t, merged, coalesceData(merged), "coalescing is idempotent")

			rt := newRuntime(t, Options{})
			memoryOf := func(bin []byte) []byte {
				m, err := rt.r.CompileModule(ctx, bin)
				require.NoError(t, err)
				defer m.Close(ctx)
				inst, err := instantiate(ctx, rt.r, m, 1<<30, nil)
				require.NoError(t, err)
				defer inst.close(ctx)
				mem, ok := inst.mod.Memory().Read(0, inst.mod.Memory().Size())
				require.True(t, ok)
				return bytes.Clone(mem)
			}
			require.True(t, bytes.Equal(memoryOf(bin), memoryOf(merged)), "memory differs after instantiation")
		})
	}
}

func TestCoalesceDataLeavesOtherModulesAlone(t *testing.T) {
	for _, bin := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00"), []byte("\x00asm\x01\x00\x00\x00\x0b\x05")} {
		require.Equal(t, bin, coalesceData(bin))
	}
	// Overlapping or passive segments are left as they are.
	for _, data := range [][]byte{
		{2, 0, 0x41, 9, 0x0b, 2, 'a', 'a', 0, 0x41, 8, 0x0b, 2, 'b', 'b'},
		{2, 0, 0x41, 8, 0x0b, 2, 'a', 'a', 0, 0x41, 9, 0x0b, 1, 'b'},
		{2, 0, 0x41, 8, 0x0b, 1, 'a', 1, 1, 'b'},
	} {
		bin := append([]byte("\x00asm\x01\x00\x00\x00\x0b"), byte(len(data)))
		bin = append(bin, data...)
		require.Equal(t, bin, coalesceData(bin))
	}
	// In order with a small gap: one segment, the gap written as zeros.
	bin := []byte("\x00asm\x01\x00\x00\x00\x0b\x0d\x02\x00\x41\x08\x0b\x01a\x00\x41\x0b\x0b\x01b")
	want := []byte("\x00asm\x01\x00\x00\x00\x0b\x0a\x01\x00\x41\x08\x0b\x04a\x00\x00b")
	require.Equal(t, want, coalesceData(bin))
	// Out of order: the same.
	bin = []byte("\x00asm\x01\x00\x00\x00\x0b\x0d\x02\x00\x41\x0b\x0b\x01b\x00\x41\x08\x0b\x01a")
	require.Equal(t, want, coalesceData(bin))
}

func countData(t *testing.T, bin []byte) int {
	m, err := wasmbin.Read(bin)
	require.NoError(t, err)
	s, ok := m.Section(wasmbin.SectionData)
	require.True(t, ok, "no data section")
	n, err := s.Count()
	require.NoError(t, err)
	return int(n)
}

func BenchmarkCoalesceData(b *testing.B) {
	bin := jsguest.Wasm()
	for range b.N {
		coalesceData(bin)
	}
}
