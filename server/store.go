package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/plimsoll/plimsoll/profiles"
)

// ProfileFile is what the daemon knows of one file in the profile directory: the version it
// serves, and the last refusal if the file's current content is invalid. The admin plane reads
// these.
type ProfileFile struct {
	File     string    `json:"file"`
	Name     string    `json:"name"`
	Version  int       `json:"version"` // 1 for the first good load, +1 per good reload; 0 never loaded
	LoadedAt time.Time `json:"loaded_at,omitzero"`
	// Error is the refusal of the file's latest content ("" when it is served as it is); the
	// last good version, if any, is still served.
	Error    string    `json:"error,omitempty"`
	Field    string    `json:"field,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`
	profile  *profiles.Profile
	digest   [32]byte // sha256 of the content the served version was loaded from
	refused  [32]byte // sha256 of the content last refused, so a rescan does not refuse it again
}

// profileStore holds the profiles the daemon serves, reloaded file by file, all or nothing.
type profileStore struct {
	dir string
	log *slog.Logger

	mu    sync.RWMutex
	files map[string]*ProfileFile // by path
	gen   int                     // bumped on every change, for tests and the admin plane
}

// supported is whether a file name is a profile (by extension).
func supported(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".toml", ".json":
		return !strings.HasPrefix(filepath.Base(name), ".")
	}
	return false
}

// newProfileStore loads every profile in dir; invalid files are kept as errors, not fatal.
func newProfileStore(dir string, log *slog.Logger) (*profileStore, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("profiles directory: %w", err)
	}
	s := &profileStore{dir: dir, log: log, files: map[string]*ProfileFile{}}
	for _, e := range entries {
		if !e.IsDir() && supported(e.Name()) {
			s.reload(filepath.Join(dir, e.Name()))
		}
	}
	return s, nil
}

// Get returns the served profile called name.
func (s *profileStore) Get(name string) (*profiles.Profile, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.files {
		if f.profile != nil && f.Name == name {
			return f.profile, true
		}
	}
	return nil, false
}

// Profiles returns the served profiles, by name.
func (s *profileStore) Profiles() []*profiles.Profile {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*profiles.Profile
	for _, f := range s.files {
		if f.profile != nil {
			out = append(out, f.profile)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// State returns a copy of every file's state, by file, and the store's generation.
func (s *profileStore) State() ([]ProfileFile, int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ProfileFile, 0, len(s.files))
	for _, f := range s.files {
		c := *f
		c.profile = nil
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, s.gen
}

// reload loads path again: a good load replaces the served version, a refusal keeps it.
func (s *profileStore) reload(path string) {
	raw, _ := os.ReadFile(path) // for the digest only; a change before LoadFile only makes it stale
	p, err := profiles.LoadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err != nil && !fileExists(path)) {
		s.remove(path)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	f := s.files[path]
	if f == nil {
		f = &ProfileFile{File: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
		s.files[path] = f
	}
	if err == nil {
		err = s.conflictLocked(path, p.Name)
	}
	if err != nil {
		f.refused = sha256.Sum256(raw)
		s.refuseLocked(f, err)
		return
	}
	f.profile, f.Version, f.LoadedAt, f.digest = p, f.Version+1, time.Now(), sha256.Sum256(raw)
	f.Error, f.Field, f.FailedAt = "", "", time.Time{}
	s.log.Info("profile loaded", "file", path, "profile", p.Name, "version", f.Version)
}

// conflictLocked refuses a second file defining the same profile name.
func (s *profileStore) conflictLocked(path, name string) error {
	for other, f := range s.files {
		if other != path && f.Name == name && f.profile != nil {
			return &profiles.Error{File: path, Reason: fmt.Sprintf("profile name %q is also defined by %s", name, other)}
		}
	}
	return nil
}

func (s *profileStore) refuseLocked(f *ProfileFile, err error) {
	f.Error, f.FailedAt = err.Error(), time.Now()
	var pe *profiles.Error
	if errors.As(err, &pe) {
		f.Field = pe.Field
	}
	s.log.Error("profile refused; the last good version stays", "file", f.File, "field", f.Field,
		"error", err.Error(), "serving_version", f.Version)
}

func (s *profileStore) remove(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[path]; ok {
		delete(s.files, path)
		s.gen++
		s.log.Info("profile removed", "file", path)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Watch reloads changed files until ctx ends. An event is acted on once the file has been quiet
// for settleDelay, so a reload never reads a file half written (a truncate and a write arrive as
// separate events); and every rescanEvery the directory is read again, so a missed event (a
// directory swapped through a symlink, an event dropped under load) is caught. Unchanged files
// are left alone either way.
func (s *profileStore) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch profiles: %w", err)
	}
	if err := w.Add(s.dir); err != nil {
		w.Close()
		return fmt.Errorf("watch profiles directory %s: %w", s.dir, err)
	}
	go func() {
		defer w.Close()
		dirty := map[string]bool{}
		settle := time.NewTimer(time.Hour)
		settle.Stop()
		rescan := time.NewTicker(rescanEvery)
		defer rescan.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if supported(ev.Name) {
					dirty[ev.Name] = true
					settle.Reset(settleDelay)
				}
			case <-settle.C:
				for path := range dirty {
					s.reloadIfChanged(path)
				}
				clear(dirty)
			case <-rescan.C:
				s.rescan()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				s.log.Error("profile watcher", "error", err.Error())
			}
		}
	}()
	return nil
}

// How the watcher paces itself.
const (
	settleDelay = 50 * time.Millisecond
	rescanEvery = 2 * time.Second
)

// reloadIfChanged reloads path unless its content is the version served, or the one refused.
func (s *profileStore) reloadIfChanged(path string) {
	raw, err := os.ReadFile(path)
	s.mu.RLock()
	f := s.files[path]
	sum := sha256.Sum256(raw)
	same := err == nil && f != nil && ((f.Error == "" && f.digest == sum) || (f.Error != "" && f.refused == sum))
	s.mu.RUnlock()
	if !same {
		s.reload(path)
	}
}

// rescan reloads every changed profile file in the directory and forgets those that are gone.
func (s *profileStore) rescan() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		path := filepath.Join(s.dir, e.Name())
		if supported(path) {
			seen[path] = true
			s.reloadIfChanged(path)
		}
	}
	s.mu.RLock()
	var gone []string
	for path := range s.files {
		if !seen[path] {
			gone = append(gone, path)
		}
	}
	s.mu.RUnlock()
	for _, path := range gone {
		s.remove(path)
	}
}
