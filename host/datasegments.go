package host

import "github.com/plimsoll/plimsoll/internal/wasmbin"

// Go's wasm linker leaves runs of zeros out of the data section, so the JavaScript runtime has
// about 100,000 small active data segments. wazero evaluates each segment's offset expression and
// keeps a slice header per segment in every instance: about 6 ms and 2.3 MiB of Go heap per
// instantiation. The JS runtime's module normally has no data section at all (see snapshot.go);
// when it cannot be prepared that way, and for every Extism plugin, coalesceData merges
// neighbouring segments into one before the module is compiled (wasmbin.Module.CoalesceData).

// coalesceData returns bin with adjacent active data segments merged, or bin itself.
func coalesceData(bin []byte) []byte {
	m, err := wasmbin.Read(bin)
	if err != nil {
		return bin
	}
	return m.CoalesceData()
}
