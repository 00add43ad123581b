package hostfuncs

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/guests/testguest"
)

// module assembles a wasm binary with one function type and the given imports.
// typ is the type's encoding after 0x60; each import is module, name and its kind+type bytes.
func module(typ []byte, imports ...importSpec) []byte {
	section := func(id byte, body []byte) []byte {
		return append([]byte{id, byte(len(body))}, body...) // bodies here stay under 128 bytes
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }

	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(0x01, append([]byte{0x01, 0x60}, typ...))...)
	body := []byte{byte(len(imports))}
	for _, im := range imports {
		body = append(body, name(im.module)...)
		body = append(body, name(im.name)...)
		body = append(body, im.desc...)
	}
	return append(out, section(0x02, body)...)
}

type importSpec struct {
	module, name string
	desc         []byte
}

var (
	hostCallType = []byte{0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f} // (i32, i32, i32, i32) -> i32
	funcOfType0  = []byte{0x00, 0x00}                               // a function of type 0
	oneMemPage   = []byte{0x02, 0x00, 0x01}                         // a memory of at least one page
)

func compile(t *testing.T, bin []byte) wazero.CompiledModule {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { r.Close(ctx) })
	m, err := r.CompileModule(ctx, bin)
	require.NoError(t, err)
	return m
}

func TestCheckImportsRefusesEnvFoo(t *testing.T) {
	err := CheckImports(compile(t, testguest.ImportsEnvFoo))

	require.EqualError(t, err, "guest imports env.foo, which plimsoll does not provide "+
		"(allowed: wasi_snapshot_preview1, plimsoll.host_call, plimsoll.host_response, plimsoll.host_submit, plimsoll.host_wait, plimsoll.host_result)")
	var ie *ImportError
	require.True(t, errors.As(err, &ie))
	require.Equal(t, "env", ie.Module)
	require.Equal(t, "foo", ie.Name)
}

func TestCheckImports(t *testing.T) {
	tests := []struct {
		name string
		bin  []byte
		err  string
	}{
		{"the Go test guest", testguest.Wasm(), ""},
		{"WASI and host_call", module(hostCallType,
			importSpec{"wasi_snapshot_preview1", "fd_write", funcOfType0},
			importSpec{abi.Module, abi.HostCall, funcOfType0}), ""},
		{"an unknown plimsoll function", module(hostCallType,
			importSpec{abi.Module, "host_exec", funcOfType0}),
			"guest imports plimsoll.host_exec, which plimsoll does not provide"},
		{"host_call with the wrong type", module([]byte{0x00, 0x00},
			importSpec{abi.Module, abi.HostCall, funcOfType0}),
			"guest imports plimsoll.host_call as () -> (), but the ABI defines it as (i32, i32, i32, i32) -> (i32)"},
		{"host_response with host_call's type", module(hostCallType,
			importSpec{abi.Module, abi.HostResponse, funcOfType0}),
			"guest imports plimsoll.host_response as (i32, i32, i32, i32) -> (i32), but the ABI defines it as (i32, i32) -> (i32)"},
		{"a memory", module(hostCallType,
			importSpec{"env", "memory", oneMemPage}),
			"guest imports env.memory as a memory; a guest must define its own memory"},
		{"the first refused import is named", module(hostCallType,
			importSpec{"wasi_snapshot_preview1", "fd_write", funcOfType0},
			importSpec{"wasi_unstable", "fd_write", funcOfType0},
			importSpec{"env", "foo", funcOfType0}),
			"guest imports wasi_unstable.fd_write, which plimsoll does not provide"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckImports(compile(t, tc.bin))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// A guest that imports only what plimsoll provides instantiates against the real modules.
func TestInstantiateProvidesTheABI(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	require.NoError(t, Instantiate(ctx, r))

	m, err := r.CompileModule(ctx, module(hostCallType, importSpec{abi.Module, abi.HostCall, funcOfType0}))
	require.NoError(t, err)
	require.NoError(t, CheckImports(m))
	mod, err := r.InstantiateModule(ctx, m, wazero.NewModuleConfig().WithName(""))
	require.NoError(t, err)
	require.NoError(t, mod.Close(ctx))

	require.Error(t, Instantiate(ctx, r), "the module is defined once per runtime")
}
