package host

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// MaxToolBytes is the most a tool's source or module may be, however it arrives: a file, stdin,
// a daemon's request body, an MCP call, a conformance driver. It is DefaultModuleLimits()'s module
// size, so a tool the host would run is never refused on the way in; a daemon's body cap (8 MiB by
// default) still applies before it.
const MaxToolBytes = 32 << 20

// ErrToolTooLarge is matched by a tool over MaxToolBytes; ErrToolKind by a name whose extension
// no kind answers to (KindFor): its message lists the ones they do.
var (
	ErrToolTooLarge = errors.New("the tool is over the tool size cap")
	ErrToolKind     = errors.New("the tool is neither " + list(extensions(), "nor"))
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
		return fmt.Sprintf("tool %s: want a %s file", e.Name, list(extensions(), "or"))
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

// ToolFromSource builds the tool named name from src as the kind its extension names (KindFor):
// .js is JSTool, .py is PythonTool, .wasm is WasmTool (an Extism plugin when it imports Extism's
// host modules). src is not copied for a module.
func ToolFromSource(name string, src []byte) (Tool, error) {
	if len(src) > MaxToolBytes {
		return Tool{}, &ReadToolError{Name: name, Err: ErrToolTooLarge}
	}
	k, ok := KindFor(filepath.Ext(name))
	if !ok {
		return Tool{}, &ReadToolError{Name: name, Err: ErrToolKind}
	}
	return k.Tool(name, src), nil
}

// list is words as a sentence says them: "a, b or c" with conj "or".
func list(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
