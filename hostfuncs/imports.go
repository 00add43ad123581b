package hostfuncs

import (
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// WASIModuleName is the WASI preview 1 import module, the only other module a guest may import.
const WASIModuleName = "wasi_snapshot_preview1"

// ImportError says which import of a guest plimsoll refuses, and why.
type ImportError struct {
	Module, Name string
	Reason       string // set when the name is allowed but its shape is not
}

func (e *ImportError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("guest imports %s.%s %s", e.Module, e.Name, e.Reason)
	}
	return fmt.Sprintf("guest imports %s.%s, which plimsoll does not provide (allowed: %s, %s.host_call, %s.host_response)",
		e.Module, e.Name, WASIModuleName, ModuleName, ModuleName)
}

// abiTypes are the signatures of the plimsoll module's functions.
var abiTypes = map[string]struct{ params, results []api.ValueType }{
	"host_call":     {params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, results: []api.ValueType{api.ValueTypeI32}},
	"host_response": {params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, results: []api.ValueType{api.ValueTypeI32}},
}

// CheckImports refuses a compiled guest that imports anything but WASI functions and the plimsoll
// module's two functions, with their ABI signatures. Call it before instantiating, so that a guest
// fails with an error naming the import rather than wazero's "module not instantiated".
func CheckImports(m wazero.CompiledModule) error {
	if mems := m.ImportedMemories(); len(mems) > 0 {
		mod, name, _ := mems[0].Import()
		return &ImportError{Module: mod, Name: name, Reason: "as a memory; a guest must define its own memory"}
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		switch mod {
		case WASIModuleName:
			continue
		case ModuleName:
			want, ok := abiTypes[name]
			if !ok {
				break
			}
			if !sameTypes(def.ParamTypes(), want.params) || !sameTypes(def.ResultTypes(), want.results) {
				return &ImportError{Module: mod, Name: name, Reason: fmt.Sprintf("as %s, but the ABI defines it as %s",
					signature(def.ParamTypes(), def.ResultTypes()), signature(want.params, want.results))}
			}
			continue
		}
		return &ImportError{Module: mod, Name: name}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(params) + " -> " + names(results)
}
