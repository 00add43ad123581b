package host

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/internal/wasmbin"
	"github.com/plimsoll/plimsoll/profiles"
)

// TestSnapshotRunsDrawTheirOwnRandomness checks that instances restored from the snapshot share
// no randomness a tool can see: Math.random reads WASI random_get in each instance.
func TestSnapshotRunsDrawTheirOwnRandomness(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	tool := JSTool("random.js", `return [Math.random(), Math.random(), Date.now()];`)
	for name, rt := range map[string]*Runtime{"fresh": shared(t), "pooled": newRuntime(t, Options{PoolSize: 2})} {
		t.Run(name, func(t *testing.T) {
			g, err := rt.jsEngine().guest()
			require.NoError(t, err)
			require.NotNil(t, g.snap, "no snapshot: every instance runs _initialize")
			seen := map[float64]bool{}
			for range 4 {
				res := rt.Run(context.Background(), tool, p, nil)
				require.NoError(t, res.Err)
				var got []float64
				require.NoError(t, json.Unmarshal(res.Output, &got))
				for _, f := range got[:2] {
					require.False(t, seen[f], "a random value repeated across runs: %v", f)
					seen[f] = true
				}
			}
		})
	}
}

// TestSnapshotMemoryLimit: a limit above the module's minimum but below the memory the runtime has
// after _initialize is a memory limit, as when _initialize itself ran out.
func TestSnapshotMemoryLimit(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	p.Limits.Memory = 1400 << 10 // a profile built in code; LoadFile refuses under 16MiB
	res := shared(t).Run(context.Background(), JSTool("t.js", `return 1;`), p, nil)
	require.Equal(t, broker.StatusLimit, res.Audit.Status)
	require.EqualError(t, res.Err, "memory limit limits.memory (1400KiB) reached")
}

func TestPrepareJS(t *testing.T) {
	// No export section, no data section, no globals, or a data count section: not prepared.
	for _, bin := range [][]byte{nil, []byte("\x00asm\x01\x00\x00\x00"),
		[]byte("\x00asm\x01\x00\x00\x00\x07\x01\x00"),
		[]byte("\x00asm\x01\x00\x00\x00\x06\x06\x01\x7f\x01\x41\x00\x0b\x07\x01\x00"),
		[]byte("\x00asm\x01\x00\x00\x00\x06\x06\x01\x7f\x01\x41\x00\x0b\x07\x01\x00\x0c\x01\x00\x0b\x01\x00"),
	} {
		_, _, names, ok := prepareJS(bin)
		require.False(t, ok)
		require.Nil(t, names)
	}
	// One imported global (index 0), two defined ones (1 and 2), a memory and two data segments.
	bin := []byte("\x00asm\x01\x00\x00\x00" +
		"\x02\x08\x01\x01m\x01g\x03\x7f\x00" + // import m.g: const i32
		"\x05\x03\x01\x00\x01" + // memory, min 1 page
		"\x06\x0b\x02\x7f\x01\x41\x00\x0b\x7e\x01\x42\x00\x0b" + // (mut i32) 0, (mut i64) 0
		"\x07\x01\x00" + // no exports
		"\x0b\x0d\x02\x00\x41\x0b\x0b\x01b\x00\x41\x08\x0b\x01a") // "b" at 11, "a" at 8
	mod, data, names, ok := prepareJS(bin)
	require.True(t, ok)
	require.Equal(t, []string{globalExportPrefix + "1", globalExportPrefix + "2"}, names)
	require.Equal(t, []wasmbin.DataSegment{{Offset: 11, Init: []byte("b")}, {Offset: 8, Init: []byte("a")}}, data)
	require.NotContains(t, string(mod), "\x0b\x0d\x02", "the data section is gone")
	rt := newRuntime(t, Options{})
	m, err := rt.r.CompileModule(context.Background(), mod)
	require.NoError(t, err)
	require.Len(t, m.ExportedFunctions(), 0)
}

// TestSnapshotImageIsShared checks that on Linux instances map the image rather than copy it,
// and that what one instance writes stays in that instance.
func TestSnapshotImageIsShared(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory images are mapped on Linux only")
	}
	rt := shared(t)
	g, err := rt.jsEngine().guest()
	require.NoError(t, err)
	require.NotNil(t, g.snap)
	require.NotNil(t, g.snap.file)
	require.Nil(t, g.snap.image, "the image is kept once, in the memfd")

	ctx := context.Background()
	a, err := rt.newInstance(ctx, g, profiles.MaxMemory)
	require.NoError(t, err)
	defer a.close(ctx)
	require.True(t, a.mem.imaged)
	before, ok := a.mod.Memory().Read(0, a.mod.Memory().Size())
	require.True(t, ok)
	want := bytes.Clone(before)
	for i := 0; i < len(before); i += 4096 {
		before[i] ^= 0xff
	}
	b, err := rt.newInstance(ctx, g, profiles.MaxMemory)
	require.NoError(t, err)
	defer b.close(ctx)
	got, ok := b.mod.Memory().Read(0, b.mod.Memory().Size())
	require.True(t, ok)
	require.True(t, bytes.Equal(want, got), "a write to one instance's memory reached another")
}

func TestPrepareData(t *testing.T) {
	const header = "\x00asm\x01\x00\x00\x00"
	const memory = "\x05\x03\x01\x00\x01" // memory, min 1 page
	// No data section, no memory of its own, a data count section, a segment past the memory's
	// minimum: not prepared.
	for _, bin := range []string{header + memory,
		header + "\x0b\x07\x01\x00\x41\x08\x0b\x01a",
		header + memory + "\x0c\x01\x01" + "\x0b\x07\x01\x00\x41\x08\x0b\x01a",
		header + memory + "\x0b\x09\x01\x00\x41\x80\x80\x04\x0b\x01a", // "a" at 65536
	} {
		_, snap, ok := prepareData([]byte(bin))
		require.False(t, ok, "%q", bin)
		require.Nil(t, snap)
	}
	// "a" at 65535 ends where the memory does.
	_, snap, ok := prepareData([]byte(header + memory + "\x0b\x09\x01\x00\x41\xff\xff\x03\x0b\x01a"))
	require.True(t, ok)
	require.EqualValues(t, 65536, snap.size)
	snap.close()

	// "bc" at 10, then "a" at 8 and "X" at 11 over it: later segments win, as in instantiation.
	bin := []byte(header + memory + "\x0b\x14\x03\x00\x41\x0a\x0b\x02bc\x00\x41\x08\x0b\x01a\x00\x41\x0b\x0b\x01X")
	mod, snap, ok := prepareData(bin)
	require.True(t, ok)
	defer snap.close()
	require.True(t, snap.beforeInit)
	require.Equal(t, []byte(header+memory), mod, "the data section is gone")
	got := make([]byte, snap.size)
	if snap.file != nil {
		require.NoError(t, snap.file.copyTo(got))
	} else {
		copy(got, snap.image)
	}
	require.Equal(t, []byte("\x00\x00\x00\x00\x00\x00\x00\x00a\x00bX"), got)
}

// TestGoToolStartsFromItsDataImage checks that a .wasm tool's instance, before _initialize,
// holds the same memory whether wazero applied the data segments or the image was mapped, and
// that each run still runs _initialize in a fresh instance.
func TestGoToolStartsFromItsDataImage(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{})
	for range 2 {
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "state"}))
		require.NoError(t, res.Err)
		require.Equal(t, "1\n", string(res.Output), "a package variable kept its value from another run")
	}
	ctx := context.Background()
	tool := goGuest()
	g := rt.kinds[KindWasm].(*wasmKind).modules.lookup(tool.src.(module).sum)
	require.NotNil(t, g)
	defer g.release()
	// A run of the cached module with room for its memory but not its tables is still refused.
	p.Limits.Memory = int64(g.shape.minPages)*wasmPage + int64(g.shape.tableElements)*tableElementBytes/2
	res := rt.Run(ctx, tool, p, guestCmd(map[string]any{"op": "state"}))
	require.Equal(t, broker.StatusLimit, res.Audit.Status)
	require.ErrorContains(t, res.Err, "the module's memory (")
	require.EqualValues(t, 1, rt.kinds[KindWasm].(*wasmKind).compiled.Load())
	require.NotNil(t, g.snap, "the data section was not turned into an image")
	require.True(t, g.snap.beforeInit)
	if runtime.GOOS == "linux" {
		require.NotNil(t, g.snap.file)
	}
	inst, err := rt.newInstance(ctx, g, profiles.MaxMemory)
	require.NoError(t, err)
	defer inst.close(ctx)
	require.False(t, inst.initialized, "_initialize must run in every instance")
	require.Equal(t, runtime.GOOS == "linux", inst.mem.imaged)

	plain, err := rt.compile(ctx, tool.src.(module).wasm)
	require.NoError(t, err)
	defer plain.mod.Close(ctx)
	ref, err := rt.newInstance(ctx, plain, profiles.MaxMemory)
	require.NoError(t, err)
	defer ref.close(ctx)
	want, _ := ref.mod.Memory().Read(0, ref.mod.Memory().Size())
	got, _ := inst.mod.Memory().Read(0, inst.mod.Memory().Size())
	require.Equal(t, len(want), len(got))
	require.True(t, bytes.Equal(want, got), "the mapped image differs from the data segments applied")
}

// TestDataImageBeforeStartFunction: a module's start function runs inside instantiation, after
// its data segments are applied and before the host could copy an image in. Where the image is
// copied, not mapped (no memfd; every platform but Linux), such a module must keep its data
// section. Here the start function writes mem[1] = mem[0]+1 over the data segment's "a".
func TestDataImageBeforeStartFunction(t *testing.T) {
	const body = "\x00\x41\x01\x41\x00\x2d\x00\x00\x41\x01\x6a\x3a\x00\x00\x0b" // i32.store8(1, i32.load8_u(0)+1)
	bin := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" + // type 0: () -> ()
		"\x03\x03\x02\x00\x00" + // two functions of type 0
		"\x05\x03\x01\x00\x01" + // memory, min 1 page
		"\x07\x0a\x01\x06_start\x00\x01" + // export _start: function 1
		"\x08\x01\x00" + // start: function 0
		"\x0a\x14\x02\x0f" + body + "\x02\x00\x0b" +
		"\x0b\x07\x01\x00\x41\x00\x0b\x01a") // "a" at 0
	ctx := context.Background()
	rt := newRuntime(t, Options{})
	g, err := rt.kinds[KindWasm].(*wasmKind).compile(bin, moduleShape{minPages: 1})
	require.NoError(t, err)
	defer g.close()
	if g.snap != nil && g.snap.file != nil { // copy the image in, as a platform without memfd does
		g.snap.image = make([]byte, g.snap.size)
		require.NoError(t, g.snap.file.copyTo(g.snap.image))
		g.snap.file.close()
		g.snap.file = nil
	}
	inst, err := rt.newInstance(ctx, g, profiles.MaxMemory)
	require.NoError(t, err)
	defer inst.close(ctx)
	got, _ := inst.mod.Memory().Read(0, 2)
	require.Equal(t, "ab", string(got), "the start function saw the data segment")
}
