package host

import (
	"testing"
)

// FuzzCheckModule: the structure check never panics on any bytes, and a module it accepts keeps
// being accepted once its tables are bounded, with the same table elements and none growable.
func FuzzCheckModule(f *testing.F) {
	f.Add(wasmModule(typeVoid, funcs(1), exportStart0, bodies(1, 3)))
	f.Add(wasmModule(typeVoid, section(4, vec(2, []byte{0x70, 0, 10}, []byte{0x70, 1, 5, 7}))))
	f.Add(wasmModule(typeVoid, funcs(1), bodies(1, 1<<26)))
	f.Add(wasmModule(typeVoid, table(3), table(4))) // two table sections
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x01\x10\x01"))
	lim := DefaultModuleLimits()
	lim.Bytes = 1 << 20
	f.Fuzz(func(t *testing.T, bin []byte) {
		shape, err := checkModule(bin, lim)
		if err != nil {
			return
		}
		bounded := boundTables(bin, shape)
		again, err := checkModule(bounded, lim)
		if err != nil {
			t.Fatalf("the bounded module is refused: %v", err)
		}
		if again.growable != 0 || again.tableElements != shape.tableElements || again.minPages != shape.minPages {
			t.Fatalf("bounding changed the shape: %+v → %+v", shape, again)
		}
	})
}
