package apigen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files names what WriteAll writes for base name NAME, in dir.
type Files struct {
	Routes      string // NAME.routes: the route list, one per line
	Preamble    string // NAME.preamble.js: the client library
	Python      string // NAME.preamble.py: the Python client library
	Description string // NAME.description.txt: the tool description
	Health      string // NAME.health: the health line, only when an operation is tagged
	Profile     string // NAME.yaml: the grant profile, naming the preamble
}

// FilesFor returns the file names WriteAll uses for name (without a directory).
func FilesFor(name string) Files {
	return Files{
		Routes:      name + ".routes",
		Preamble:    name + ".preamble.js",
		Python:      name + ".preamble.py",
		Description: name + ".description.txt",
		Health:      name + ".health",
		Profile:     name + ".yaml",
	}
}

// WriteAll writes every output for the spec into dir (created if missing): routes, preamble,
// description, health (when tagged; a stale NAME.health from an earlier run is removed when not)
// and a profile NAME.yaml whose preamble field names NAME.preamble.js and whose description field
// names NAME.description.txt. name "" means
// spec.Name(). A misused health tag fails before anything is written.
func WriteAll(spec *Spec, dir, name string) error {
	if name == "" {
		name = spec.Name()
	}
	if !ValidName(name) {
		return fmt.Errorf("specgen: name %q: use letters, digits, '-' and '_' only", name)
	}
	health, tagged, err := spec.Health()
	if err != nil {
		return err
	}
	f := FilesFor(name)
	profile, err := spec.Profile(ProfileOptions{Name: name, Preamble: f.Preamble, Python: f.Python, Description: f.Description})
	if err != nil {
		return err
	}
	preamble, err := spec.Preamble()
	if err != nil {
		return err
	}
	python, err := spec.PythonClient()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	outputs := []struct{ file, text string }{
		{f.Routes, strings.Join(spec.Routes(), "\n") + "\n"},
		{f.Preamble, preamble},
		{f.Python, python},
		{f.Description, spec.Description()},
	}
	if tagged {
		outputs = append(outputs, struct{ file, text string }{f.Health, health + "\n"})
	}
	outputs = append(outputs, struct{ file, text string }{f.Profile, string(profile)})
	for _, o := range outputs {
		if err := WriteFile(filepath.Join(dir, o.file), []byte(o.text)); err != nil {
			return err
		}
	}
	if !tagged {
		if err := os.Remove(filepath.Join(dir, f.Health)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// WriteFile writes one generated file through a temporary file in the same directory and renames
// it into place, so a reader never sees half a file.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
