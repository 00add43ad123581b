// Package auditlog is plimsoll's one audit writer: the CLI, the MCP stdio server and the daemon
// (its audit file and its crash journal) append lines through File.
//
// The durability rule, chosen once: Append returns once the line is written and, when the File
// is a file, synced to disk (fsync). Appends that arrive while a sync is running are written and
// synced together by the next one (group commit), so a busy daemon pays one fsync per batch, not
// per run. A File on a stream (stdout, stderr) writes and does not sync. A line Append fails to
// write is the caller's to put elsewhere (stderr, the log): it is never dropped silently.
package auditlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
)

// File appends lines and returns once they are durable.
type File struct {
	mu      sync.Mutex // guards pending, waiters and syncing: never held during I/O
	pending [][]byte
	waiters []chan error
	syncing bool

	io       sync.Mutex // held while a batch is written and synced, or the file swapped or closed
	path     string     // "" for a stream
	f        *os.File   // nil for a stream
	w        io.Writer
	syncFile func(*os.File) error // (*os.File).Sync; a test may watch it
}

// Open opens path for appending (creating it, mode 0600).
func Open(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &File{path: path, f: f, w: f, syncFile: (*os.File).Sync}, nil
}

// Stream is a File writing to w, unsynced.
func Stream(w io.Writer) *File { return &File{w: w} }

// Append writes line (one or more whole lines) and waits until it is durable.
func (s *File) Append(line []byte) error {
	done := make(chan error, 1)
	s.mu.Lock()
	s.pending = append(s.pending, line)
	s.waiters = append(s.waiters, done)
	leader := !s.syncing
	s.syncing = true
	s.mu.Unlock()
	if leader {
		s.flushLoop()
	}
	return <-done
}

// flushLoop writes and syncs batches until none is pending; one caller runs it at a time.
func (s *File) flushLoop() {
	for {
		s.mu.Lock()
		lines, waiters := s.pending, s.waiters
		s.pending, s.waiters = nil, nil
		if len(lines) == 0 {
			s.syncing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock() // appends that arrive during the write and sync join the next batch
		s.io.Lock()   // a Rewrite or Close never splits a batch
		err := s.writeBatch(lines)
		s.io.Unlock()
		for _, w := range waiters {
			w <- err
		}
	}
}

func (s *File) writeBatch(lines [][]byte) error {
	if s.w == nil {
		return errors.New("the audit file is closed")
	}
	if _, err := s.w.Write(bytes.Join(lines, nil)); err != nil {
		return err
	}
	if s.f == nil {
		return nil
	}
	return s.syncFile(s.f)
}

// Rewrite replaces the file's contents with b, durably: a synced temporary file renamed over it.
// A stream cannot be rewritten.
func (s *File) Rewrite(b []byte) error {
	if s.path == "" {
		return errors.New("a stream cannot be rewritten")
	}
	tmp := s.path + ".tmp"
	if err := WriteSynced(tmp, b); err != nil {
		return err
	}
	s.io.Lock() // no batch is written while the file is swapped
	defer s.io.Unlock()
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.f.Close()
	s.f, s.w = f, f
	return nil
}

// Close syncs and closes the file; a stream is left open.
func (s *File) Close() error {
	s.io.Lock()
	defer s.io.Unlock()
	if s.f == nil {
		return nil
	}
	err := errors.Join(s.f.Sync(), s.f.Close())
	s.f, s.w = nil, nil
	return err
}

// WriteSynced writes b to path, replacing it, and syncs it.
func WriteSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Sync(), f.Close())
}
