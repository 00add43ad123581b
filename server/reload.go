package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// ProfileChange is one file a reload loaded, added or removed.
type ProfileChange struct {
	File    string `json:"file"`
	Name    string `json:"name"`
	Version int    `json:"version"` // now served; 0 for a removed file
}

// ProfileRefusal is one file a reload refused; ServingVersion (0 for none) is still served.
type ProfileRefusal struct {
	File           string `json:"file"`
	Name           string `json:"name"`
	Field          string `json:"field,omitempty"`
	Error          string `json:"error"`
	ServingVersion int    `json:"serving_version"`
}

// ProfilesReload says what POST /admin/reload did to the profile directory.
type ProfilesReload struct {
	Added     []ProfileChange  `json:"added"`
	Changed   []ProfileChange  `json:"changed"`
	Removed   []ProfileChange  `json:"removed"`
	Refused   []ProfileRefusal `json:"refused"`
	Unchanged []string         `json:"unchanged"` // files whose content is the served version's
}

// ReloadAll re-reads the directory now, whatever the watcher saw (it misses a directory swapped
// through a symlink, as a Kubernetes ConfigMap is). A file whose content is the served version's
// is left alone; every other one is reloaded all or nothing, as the watcher does.
func (s *profileStore) ReloadAll() (ProfilesReload, error) {
	rep := ProfilesReload{Added: []ProfileChange{}, Changed: []ProfileChange{}, Removed: []ProfileChange{},
		Refused: []ProfileRefusal{}, Unchanged: []string{}}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return rep, fmt.Errorf("profiles directory: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !supported(e.Name()) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		seen[path] = true
		before, existed := s.file(path)
		raw, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // gone since ReadDir: removed below
		}
		if existed && before.profile != nil && before.Error == "" && err == nil && sha256.Sum256(raw) == before.digest {
			rep.Unchanged = append(rep.Unchanged, path)
			continue
		}
		s.reload(path)
		after, ok := s.file(path)
		switch {
		case !ok:
			seen[path] = false
		case after.Error != "":
			rep.Refused = append(rep.Refused, ProfileRefusal{File: path, Name: after.Name, Field: after.Field, Error: after.Error, ServingVersion: after.Version})
		case !existed || before.Version == 0:
			rep.Added = append(rep.Added, ProfileChange{File: path, Name: after.Name, Version: after.Version})
		default:
			rep.Changed = append(rep.Changed, ProfileChange{File: path, Name: after.Name, Version: after.Version})
		}
	}
	files, _ := s.State()
	for _, f := range files {
		if !seen[f.File] {
			s.remove(f.File)
			rep.Removed = append(rep.Removed, ProfileChange{File: f.File, Name: f.Name})
		}
	}
	return rep, nil
}

// file returns a copy of path's state.
func (s *profileStore) file(path string) (ProfileFile, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[path]
	if !ok {
		return ProfileFile{}, false
	}
	return *f, true
}

// ClientsReload says what POST /admin/reload did to the clients file. Clients are named, never
// their tokens; a changed client has a new token or other profiles.
type ClientsReload struct {
	File    string        `json:"file,omitempty"`
	Open    bool          `json:"open,omitempty"` // no clients file: nothing to reload
	Added   []string      `json:"added"`
	Changed []string      `json:"changed"`
	Removed []string      `json:"removed"`
	Refused *ClientsError `json:"refused"` // the file was refused whole; the clients before it stay
}

// replace swaps in next's clients and says who was added, changed and removed.
func (cs *Clients) replace(next *Clients) (added, changed, removed []string) {
	added, changed, removed = []string{}, []string{}, []string{}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := map[string]*Client{}
	for _, c := range cs.list {
		old[c.Name] = c
	}
	for _, c := range next.list {
		o, ok := old[c.Name]
		switch {
		case !ok:
			added = append(added, c.Name)
		case o.digest != c.digest || !slices.Equal(o.Profiles, c.Profiles) ||
			o.RunsPerMinute != c.RunsPerMinute || o.CallsPerMinute != c.CallsPerMinute:
			changed = append(changed, c.Name)
		}
		delete(old, c.Name)
	}
	for name := range old {
		removed = append(removed, name)
	}
	sort.Strings(added)
	sort.Strings(changed)
	sort.Strings(removed)
	cs.list = next.list
	return added, changed, removed
}

func (s *Server) reloadClients() ClientsReload {
	rep := ClientsReload{File: s.cfg.ClientsFile, Added: []string{}, Changed: []string{}, Removed: []string{}}
	if s.clients == nil {
		rep.Open = true
		return rep
	}
	next, err := readClients(s.cfg.ClientsFile, s.cfg.Getenv)
	if err != nil {
		var ce *ClientsError
		if !errors.As(err, &ce) {
			ce = &ClientsError{File: s.cfg.ClientsFile, Reason: err.Error()}
		}
		rep.Refused = ce
		s.log.Error("clients file refused on reload; the clients before it stay", "error", ce.Error())
		return rep
	}
	rep.Added, rep.Changed, rep.Removed = s.clients.replace(next)
	s.log.Info("clients reloaded", "added", rep.Added, "changed", rep.Changed, "removed", rep.Removed)
	return rep
}
