package python

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// memFS is a read-only tree of files held in memory: what the guest sees at /lib. Directories
// are implied by the files' paths.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := m[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
	}
	entries := m.children(name)
	if entries == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: entries}, nil
}

// children lists a directory's entries, sorted; nil when dir is no directory.
func (m memFS) children(dir string) []fs.DirEntry {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	seen := map[string]fs.DirEntry{}
	for name, data := range m {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if first, _, sub := strings.Cut(rest, "/"); sub {
			seen[first] = memInfo{name: first, dir: true}
		} else {
			seen[rest] = memInfo{name: rest, size: int64(len(data))}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// memInfo is both the fs.FileInfo and the fs.DirEntry of a file or directory.
type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string               { return i.name }
func (i memInfo) Size() int64                { return i.size }
func (i memInfo) ModTime() time.Time         { return time.Time{} }
func (i memInfo) IsDir() bool                { return i.dir }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// memFile reads, seeks and reads at offsets (WASI's fd_pread).
type memFile struct {
	info memInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error)                { return f.info, nil }
func (f *memFile) Read(b []byte) (int, error)                { return f.r.Read(b) }
func (f *memFile) ReadAt(b []byte, off int64) (int, error)   { return f.r.ReadAt(b, off) }
func (f *memFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *memFile) Close() error                              { return nil }

type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	pos     int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}
func (d *memDir) Close() error { return nil }

func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.pos:]
	if n <= 0 {
		d.pos = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.pos += len(rest)
	return rest, nil
}
