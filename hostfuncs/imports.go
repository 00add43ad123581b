package hostfuncs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/abi"
)

// ImportError says which import of a guest plimsoll refuses, and why.
type ImportError struct {
	Module, Name string
	Reason       string // set when the name is allowed but its shape is not
}

func (e *ImportError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("guest imports %s.%s %s", e.Module, e.Name, e.Reason)
	}
	allowed := []string{abi.WASIModule}
	for _, f := range abi.Funcs {
		allowed = append(allowed, abi.Module+"."+f.Name)
	}
	return fmt.Sprintf("guest imports %s.%s, which plimsoll does not provide (allowed: %s)",
		e.Module, e.Name, strings.Join(allowed, ", "))
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
		case abi.WASIModule:
			continue
		case abi.Module:
			want, ok := abi.Lookup(name)
			if !ok {
				break
			}
			params, results := valueTypes(want.Params), valueTypes(want.Results)
			if !slices.Equal(def.ParamTypes(), params) || !slices.Equal(def.ResultTypes(), results) {
				return &ImportError{Module: mod, Name: name, Reason: fmt.Sprintf("as %s, but the ABI defines it as %s",
					signature(def.ParamTypes(), def.ResultTypes()), signature(params, results))}
			}
			continue
		}
		return &ImportError{Module: mod, Name: name}
	}
	return nil
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
