package python

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/abi"
)

// The bridge's ABI constants are generated from abi/: the committed header must be what the
// generator writes now (go generate ./guests/python rewrites it).
func TestABIHeaderIsGenerated(t *testing.T) {
	got, err := os.ReadFile("src/abi.h")
	require.NoError(t, err)
	require.Equal(t, string(abi.CHeader()), string(got), "src/abi.h has drifted from abi/: run go generate ./guests/python")
}

// Lib is a well-behaved read-only fs.FS holding exactly the guest's three files.
func TestLibIsTheGuestsTree(t *testing.T) {
	lib := Lib()
	require.NoError(t, fstest.TestFS(lib, "python313.zip", "plimsoll/_plimsoll_engine.py", "plimsoll/plimsoll.py"))
	var files []string
	require.NoError(t, fs.WalkDir(lib, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Equal(t, []string{"plimsoll/_plimsoll_engine.py", "plimsoll/plimsoll.py", "python313.zip"}, files)
	_, err := lib.Open("../etc/passwd")
	require.ErrorIs(t, err, fs.ErrInvalid)
	_, err = lib.Open("etc/passwd")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// The standard library zip holds the modules tools use as sourceless .pyc, and not the ones left out.
func TestStdlibZip(t *testing.T) {
	data := stdlib()
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range z.File {
		names[f.Name] = true
		require.Equal(t, zip.Store, f.Method, "%s is stored, not deflated (the gzip around the zip compresses it)", f.Name)
	}
	for _, want := range []string{"json/__init__.pyc", "re/__init__.pyc", "asyncio/base_events.pyc", "zoneinfo/__init__.pyc", "datetime.pyc"} {
		require.True(t, names[want], "missing %s", want)
	}
	for _, absent := range []string{"json/__init__.py", "test/__init__.pyc", "ctypes/__init__.pyc", "tkinter/__init__.pyc", "idlelib/__init__.pyc"} {
		require.False(t, names[absent], "%s should not be in the zip", absent)
	}
}
