package host

import (
	"context"
	"slices"

	"github.com/plimsoll/plimsoll/profiles"
)

// registered is every kind of guest the host runs, in the order front ends list them: a new kind
// is its file (host/<kind>kind.go) and one row here. The first kind with a language is the
// default for source that names none.
var registered = []*kindEntry{
	{name: KindJS, language: "javascript", exts: []string{".js"}, tool: jsFromSource, start: newJSKind},
	{name: KindPython, language: "python", exts: []string{".py"}, tool: pythonFromSource, start: newPythonKind},
	{name: KindWasm, exts: []string{".wasm"}, tool: WasmTool, start: newWasmKind},
	{name: KindExtism, exts: []string{".wasm"}, tool: extismFromSource, start: newExtismKind},
}

// kindEntry is one row of registered.
type kindEntry struct {
	name     string
	language string                                                    // of source; "" for a module
	exts     []string                                                  // file extensions, with the dot
	tool     func(name string, src []byte) Tool                        // builds the tool from its bytes
	start    func(ctx context.Context, rt *Runtime) (guestKind, error) // makes the Runtime's one
}

// Kind is a kind of guest the host runs: JavaScript, Python, a wasip1 module, an Extism plugin.
// The zero Kind is none: its name is "" and its tools have no kind, as a zero Tool.
type Kind struct{ e *kindEntry }

var noKind = &kindEntry{tool: func(name string, _ []byte) Tool { return Tool{Name: name} }}

func (k Kind) entry() *kindEntry {
	if k.e == nil {
		return noKind
	}
	return k.e
}

// Kinds returns every kind the host runs, in the order front ends list them.
func Kinds() []Kind {
	ks := make([]Kind, len(registered))
	for i, e := range registered {
		ks[i] = Kind{e}
	}
	return ks
}

// KindFor returns the kind named nameOrExt, by its name (Tool.Kind: "python") or a file
// extension it answers to (".py"). Where kinds share an extension (a .wasm module may be an
// Extism plugin), the first registered answers: WasmTool tells them apart by the module's imports.
func KindFor(nameOrExt string) (Kind, bool) {
	for _, e := range registered {
		if e.name == nameOrExt || slices.Contains(e.exts, nameOrExt) {
			return Kind{e}, true
		}
	}
	return Kind{}, false
}

// KindForLanguage returns the kind that runs source in language (a run request's "language":
// "javascript", "python"); "" is the default language, JavaScript.
func KindForLanguage(language string) (Kind, bool) {
	for _, e := range registered {
		if e.language != "" && (e.language == language || language == "") {
			return Kind{e}, true
		}
	}
	return Kind{}, false
}

// Name is the kind's name, as Tool.Kind reports it: KindJS, KindPython, KindWasm, KindExtism.
func (k Kind) Name() string { return k.entry().name }

// Language is the language of the kind's source ("javascript", "python"), or "" for a kind whose
// tool is a module.
func (k Kind) Language() string { return k.entry().language }

// Extensions are the file extensions the kind answers to, with the dot (".py").
func (k Kind) Extensions() []string { return slices.Clone(k.entry().exts) }

// Tool builds the tool named name from src as the kind's, whatever name's extension; src is not
// copied for a module. It does not check src's size: ToolFromSource does.
func (k Kind) Tool(name string, src []byte) Tool { return k.entry().tool(name, src) }

// Languages are the languages of source the host runs, the default first.
func Languages() []string {
	var ls []string
	for _, e := range registered {
		if e.language != "" {
			ls = append(ls, e.language)
		}
	}
	return ls
}

// extensions are the registered file extensions, each once, in order.
func extensions() []string {
	var exts []string
	for _, e := range registered {
		for _, x := range e.exts {
			if !slices.Contains(exts, x) {
				exts = append(exts, x)
			}
		}
	}
	return exts
}

// source is a tool's own part, one type per kind, in the kind's file: its source or its module.
type source interface {
	kind() string // the kind's name, a row of registered
}

// guestKind is what the host needs from one kind of guest: how its module is compiled and kept,
// what its stdin is, whether a ready instance is waiting, and how to read the way its run ended.
// Runtime holds one of each registered kind, built in New by its start, and never asks which
// kind it has.
type guestKind interface {
	// load returns the compiled guest for tool and the guest's stdin. ctx carries the run's
	// deadline. The caller calls guest.release, if set, when the run is done.
	load(ctx context.Context, tool Tool, p *profiles.Profile, limits profiles.Limits, input []byte) (*guest, []byte, error)
	// pooled returns a ready instance of g that fits under memLimit, or nil.
	pooled(g *guest, memLimit uint64) *instance
	// ended says how a run ended when the kind knows better than the host's general rules
	// (outcome.go), such as a limit the guest enforced itself; ok false leaves it to them.
	ended(st *runState, ret int32, callErr error) (err error, ok bool)
	// stop ends background work (a pool's filler) before the runtime closes.
	stop(ctx context.Context)
	// release frees what outlives runs (compiled modules, snapshots) once no run is left.
	release()
}

// caller is a guestKind that makes the guest call itself, on instances it creates (an Extism
// plugin runs inside go-sdk). It sets st.inst, so the run's outcome and clean-up are as for any.
type caller interface {
	call(st *runState, input []byte) (int32, error)
}

// pooler is a guestKind that keeps ready instances (Options.PoolSize).
type pooler interface {
	startPool(size int)
}
