package conformance

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
	"github.com/plimsoll/plimsoll/host"
)

// Driver is a conformance driver: a guest that performs a scenario's operations through one
// preamble, and prints what it observed (the contract is in preamble/README.md).
type Driver struct {
	Name string
	Tool host.Tool
	ABI  int // the newest guest ABI version the driver speaks; 0 means 1
}

func (d Driver) abi() int { return max(d.ABI, 1) }

//go:embed drivers/js/driver.js
var jsDriverSource string

//go:embed drivers/python/driver.py
var pythonDriverSource string

//go:generate go run ../guests/internal/wasmbuild conformance-go

//go:embed drivers/go/driver.wasm.gz
var goDriverGz []byte

var goDriverWasm = wasmgz.Lazy("conformance/drivers/go/driver.wasm.gz", goDriverGz)

//go:generate go run ../guests/internal/wasmbuild conformance-extism-go

//go:embed drivers/extism-go/driver.wasm.gz
var extismGoDriverGz []byte

var extismGoDriverWasm = wasmgz.Lazy("conformance/drivers/extism-go/driver.wasm.gz", extismGoDriverGz)

// JSDriver is the driver for the generic JavaScript preamble (preamble/js), a JavaScript tool.
func JSDriver() Driver {
	return Driver{Name: "js", Tool: host.JSTool("conformance-driver.js", jsDriverSource), ABI: 2}
}

// PythonDriver is the driver for the generic Python client (preamble/python), a Python tool.
func PythonDriver() Driver {
	return Driver{Name: "python", Tool: host.PythonTool("conformance-driver.py", pythonDriverSource), ABI: 2}
}

// GoDriver is the driver for the Go guest preamble (preamble/go), a wasip1 reactor.
func GoDriver() Driver {
	return Driver{Name: "go", Tool: host.WasmTool("conformance-driver-go.wasm", goDriverWasm()), ABI: 2}
}

// ExtismGoDriver is the driver for Extism plugins written in Go on preamble/extism-go: a go-pdk
// plugin whose function run makes its calls through plimsoll_call.
func ExtismGoDriver() Driver {
	return Driver{Name: "extism-go", Tool: host.ExtismTool("conformance-driver-extism-go.wasm", extismGoDriverWasm(), "")}
}

// builtins are the built-in drivers, one per preamble, in the order the runner uses them.
var builtins = []struct {
	lang   string
	driver func() Driver
}{{"js", JSDriver}, {"go", GoDriver}, {"extism-go", ExtismGoDriver}, {"python", PythonDriver}}

// Languages are the built-in drivers, in the order the runner uses them.
var Languages = func() []string {
	var ls []string
	for _, b := range builtins {
		ls = append(ls, b.lang)
	}
	return ls
}()

// BuiltinDriver returns the driver for a built-in preamble, one of Languages.
func BuiltinDriver(lang string) (Driver, error) {
	for _, b := range builtins {
		if b.lang == lang {
			return b.driver(), nil
		}
	}
	return Driver{}, fmt.Errorf("no built-in driver for %q (built in: %s)", lang, strings.Join(Languages, ", "))
}

// ErrDriverFile is matched by errors from DriverFile.
var ErrDriverFile = errors.New("cannot use the driver file")

// DriverFile loads a driver from a file of any kind the host runs (host.KindFor its extension):
// a .wasm guest module, or a .js or .py tool on the generic preamble. It reads at most
// host.MaxToolBytes.
func DriverFile(path string) (Driver, error) {
	if _, ok := host.KindFor(filepath.Ext(path)); !ok {
		return Driver{}, fmt.Errorf("%w: %w", ErrDriverFile, &host.ReadToolError{Name: path, Err: host.ErrToolKind})
	}
	fh, err := os.Open(path)
	if err != nil {
		return Driver{}, fmt.Errorf("%w: %v", ErrDriverFile, err)
	}
	defer fh.Close()
	name := filepath.Base(path)
	tool, err := host.ReadTool(name, fh)
	if err != nil {
		return Driver{}, fmt.Errorf("%w %s: %v", ErrDriverFile, path, err)
	}
	d := Driver{Name: name, Tool: tool}
	if tool.Kind() == host.KindPython {
		d.ABI = 2 // the Python client always submits (ABI v2)
	}
	return d, nil
}
