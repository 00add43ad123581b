package host

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// MaxToolBytes is the most a tool's source or module may be, however it arrives: a file, stdin,
// a daemon's request body, an MCP call, a conformance driver. It is DefaultModuleLimits()'s module
// size, so a tool the host would run is never refused on the way in; a daemon's body cap (8 MiB by
// default) still applies before it.
const MaxToolBytes = 32 << 20

// ErrToolTooLarge is matched by a tool over MaxToolBytes; ErrToolKind by a name that says
// neither JavaScript (.js), Python (.py) nor a module (.wasm).
var (
	ErrToolTooLarge = errors.New("the tool is over the tool size cap")
	ErrToolKind     = errors.New("the tool is neither .js, .py nor .wasm")
)

// ReadToolError is a tool that could not be read or built: Err is ErrToolTooLarge, ErrToolKind or
// the reader's error.
type ReadToolError struct {
	Name string
	Err  error
}

func (e *ReadToolError) Error() string {
	switch e.Err {
	case ErrToolTooLarge:
		return fmt.Sprintf("tool %s is over %d bytes", e.Name, MaxToolBytes)
	case ErrToolKind:
		return fmt.Sprintf("tool %s: want a .js, .py or .wasm file", e.Name)
	}
	return fmt.Sprintf("tool %s: %v", e.Name, e.Err)
}

func (e *ReadToolError) Unwrap() error { return e.Err }

// ReadTool reads a tool named name from r, reading at most MaxToolBytes + 1 bytes: see
// ToolFromSource.
func ReadTool(name string, r io.Reader) (Tool, error) {
	src, err := io.ReadAll(io.LimitReader(r, MaxToolBytes+1))
	if err != nil {
		return Tool{}, &ReadToolError{Name: name, Err: err}
	}
	return ToolFromSource(name, src)
}

// ToolFromSource builds the tool named name from src, by the name's extension: .js is
// JSTool, .py is PythonTool, .wasm is WasmTool (an Extism plugin when it imports Extism's host modules). src is
// not copied for a module.
func ToolFromSource(name string, src []byte) (Tool, error) {
	if len(src) > MaxToolBytes {
		return Tool{}, &ReadToolError{Name: name, Err: ErrToolTooLarge}
	}
	switch filepath.Ext(name) {
	case ".js":
		return JSTool(name, string(src)), nil
	case ".py":
		return PythonTool(name, string(src)), nil
	case ".wasm":
		return WasmTool(name, src), nil
	}
	return Tool{}, &ReadToolError{Name: name, Err: ErrToolKind}
}
