package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
)

// StatusInterrupted is the audit status of a run the daemon stopped (killed, crashed) before it
// could write the run's own line; the next start writes it from the journal.
const StatusInterrupted broker.Status = "interrupted"

// auditRecord is one daemon audit line: the run's audit line plus the client that asked for it.
type auditRecord struct {
	broker.Audit
	Client    string `json:"client"`
	MCPClient string `json:"mcp_client,omitempty"` // the MCP client's own name, for a run over /mcp
}

func (a auditRecord) line() []byte {
	b, err := json.Marshal(a)
	if err != nil {
		b = []byte(`{"status":"error","error":"audit encoding failed"}`) // unreachable: strings and numbers
	}
	return append(b, '\n')
}

// syncFile appends lines to a file and returns once they are synced. Appends that arrive while
// a sync is running are written and synced together by the next one (group commit), so a busy
// daemon pays one fsync per batch, not per run.
type syncFile struct {
	mu      sync.Mutex
	f       *os.File
	w       io.Writer // f, or a writer that does not sync (stdout)
	pending [][]byte
	waiters []chan error
	syncing bool
}

func openSyncFile(path string) (*syncFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &syncFile{f: f, w: f}, nil
}

// Append writes line and waits until it is on disk.
func (s *syncFile) Append(line []byte) error {
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
func (s *syncFile) flushLoop() {
	for {
		s.mu.Lock()
		lines, waiters := s.pending, s.waiters
		s.pending, s.waiters = nil, nil
		if len(lines) == 0 {
			s.syncing = false
			s.mu.Unlock()
			return
		}
		err := s.writeBatch(lines)
		s.mu.Unlock() // written under the lock so a compaction never splits a batch
		for _, w := range waiters {
			w <- err
		}
	}
}

func (s *syncFile) writeBatch(lines [][]byte) error {
	if _, err := s.w.Write(bytes.Join(lines, nil)); err != nil {
		return err
	}
	if s.f == nil {
		return nil
	}
	return s.f.Sync()
}

// Close syncs and closes the file.
func (s *syncFile) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	return errors.Join(s.f.Sync(), s.f.Close())
}

// journalEntry is written before a run starts; an entry without an audit line is a run the
// daemon lost.
type journalEntry struct {
	RunID      string    `json:"run_id"`
	Client     string    `json:"client"`
	Profile    string    `json:"profile"`
	Tool       string    `json:"tool"`
	ToolDigest string    `json:"tool_digest"`
	Start      time.Time `json:"start"`
}

// journal is the crash journal beside the audit file. It keeps the entries of runs in flight
// so it can be compacted to them.
type journal struct {
	path    string
	file    *syncFile
	mu      sync.Mutex
	live    map[string][]byte // run id → its line
	written int               // lines since the last compaction
}

// compactEvery is how many journal lines pass before it is rewritten with only the live runs.
const compactEvery = 4096

func openJournal(path string) (*journal, error) {
	f, err := openSyncFile(path)
	if err != nil {
		return nil, err
	}
	return &journal{path: path, file: f, live: map[string][]byte{}}, nil
}

// Begin records a run before it starts.
func (j *journal) Begin(e journalEntry) error {
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	j.mu.Lock()
	j.live[e.RunID] = line
	j.written++
	j.mu.Unlock()
	return j.file.Append(line)
}

// End forgets a run whose audit line is synced, compacting the journal now and then.
func (j *journal) End(runID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.live, runID)
	if j.written >= compactEvery {
		if err := j.compactLocked(); err == nil {
			j.written = 0
		}
	}
}

// compactLocked rewrites the journal with only the live runs: temp file, sync, rename.
func (j *journal) compactLocked() error {
	tmp := j.path + ".tmp"
	var buf bytes.Buffer
	for _, line := range j.live {
		buf.Write(line)
	}
	if err := writeSynced(tmp, buf.Bytes()); err != nil {
		return err
	}
	j.file.mu.Lock() // no batch is written while the file is swapped
	defer j.file.mu.Unlock()
	if err := os.Rename(tmp, j.path); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	j.file.f.Close()
	j.file.f, j.file.w = f, f
	return nil
}

// Close compacts (a clean stop leaves an empty journal) and closes it.
func (j *journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return errors.Join(j.compactLocked(), j.file.Close())
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Sync(), f.Close())
}

// recoverJournal writes an interrupted audit line for every journaled run that has none, syncs
// the audit file, and empties the journal. It returns how many runs it recovered.
func recoverJournal(journalPath, auditPath string, audit *syncFile) (int, error) {
	entries, err := readJournal(journalPath)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	done, err := auditedRuns(auditPath)
	if err != nil {
		return 0, err
	}
	var lines [][]byte
	for _, e := range entries {
		if done[e.RunID] {
			continue
		}
		done[e.RunID] = true // an entry journaled twice is still one run
		a := broker.NewAudit(e.RunID, e.Profile, e.Tool, StatusInterrupted,
			fmt.Errorf("the daemon stopped before the run (started %s) finished", e.Start.UTC().Format(time.RFC3339)))
		lines = append(lines, auditRecord{Audit: a, Client: e.Client}.line())
	}
	if len(lines) > 0 {
		if err := audit.Append(bytes.Join(lines, nil)); err != nil {
			return 0, err
		}
	}
	return len(lines), writeSynced(journalPath, nil)
}

// readJournal reads the journal's entries; a torn last line (a crash mid-write) is skipped: a
// run is only started once its entry is whole on disk.
func readJournal(path string) ([]journalEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []journalEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.RunID != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// auditedRuns is the set of run ids that have a line in the audit file.
func auditedRuns(path string) (map[string]bool, error) {
	done := map[string]bool{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var a struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(sc.Bytes(), &a) == nil {
			done[a.RunID] = true
		}
	}
	return done, sc.Err()
}
