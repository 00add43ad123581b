package abi

// ValueType is a WebAssembly value type, in the binary format's encoding (the same numbers as
// wazero's api.ValueType).
type ValueType byte

// I32 is the only value type the ABI uses.
const I32 ValueType = 0x7f

// Func is one function of the plimsoll module.
type Func struct {
	Name        string
	Since       int // the ABI version that added it
	Params      []ValueType
	ParamNames  []string
	Results     []ValueType
	ResultNames []string
}

// Funcs is the plimsoll module, in the order the host defines it.
var Funcs = []Func{
	{
		Name: HostCall, Since: 1,
		Params:     []ValueType{I32, I32, I32, I32},
		ParamNames: []string{"req_ptr", "req_len", "resp_ptr", "resp_cap"},
		Results:    []ValueType{I32}, ResultNames: []string{"n"},
	},
	{
		Name: HostResponse, Since: 1,
		Params:     []ValueType{I32, I32},
		ParamNames: []string{"ptr", "cap"},
		Results:    []ValueType{I32}, ResultNames: []string{"n"},
	},
	{
		Name: HostSubmit, Since: 2,
		Params:     []ValueType{I32, I32},
		ParamNames: []string{"req_ptr", "req_len"},
		Results:    []ValueType{I32}, ResultNames: []string{"id"},
	},
	{
		Name: HostWait, Since: 2,
		Params:     []ValueType{I32, I32, I32},
		ParamNames: []string{"ids_ptr", "ids_cap", "timeout_ms"},
		Results:    []ValueType{I32}, ResultNames: []string{"count"},
	},
	{
		Name: HostResult, Since: 2,
		Params:     []ValueType{I32, I32, I32},
		ParamNames: []string{"id", "ptr", "cap"},
		Results:    []ValueType{I32}, ResultNames: []string{"n"},
	},
}

// Lookup returns the function of the plimsoll module called name.
func Lookup(name string) (Func, bool) {
	for _, f := range Funcs {
		if f.Name == name {
			return f, true
		}
	}
	return Func{}, false
}
