package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/internal/auditlog"
)

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
	file    *auditlog.File
	mu      sync.Mutex
	live    map[string][]byte // run id → its line
	written int               // lines since the last compaction
}

// compactEvery is how many journal lines pass before it is rewritten with only the live runs.
const compactEvery = 4096

func openJournal(path string) (*journal, error) {
	f, err := auditlog.Open(path)
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

// compactLocked rewrites the journal with only the live runs.
func (j *journal) compactLocked() error {
	var buf bytes.Buffer
	for _, line := range j.live {
		buf.Write(line)
	}
	return j.file.Rewrite(buf.Bytes())
}

// Close compacts (a clean stop leaves an empty journal) and closes it.
func (j *journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return errors.Join(j.compactLocked(), j.file.Close())
}

// recoverJournal writes an interrupted audit line for every journaled run that has none, syncs
// the audit file, and empties the journal. It returns how many runs it recovered and the lines
// it could not read whole (recoverread.go): those are reported, never fatal.
func recoverJournal(journalPath, auditPath string, audit *auditlog.File) (int, lineReport, error) {
	entries, rep, err := readJournal(journalPath)
	if err != nil || len(entries) == 0 {
		return 0, rep, err
	}
	done, arep, err := auditedRuns(auditPath)
	rep = rep.add(arep)
	if err != nil {
		return 0, rep, err
	}
	var lines [][]byte
	for _, e := range entries {
		if done[e.RunID] {
			continue
		}
		done[e.RunID] = true // an entry journaled twice is still one run
		a := broker.NewAudit(e.RunID, e.Profile, e.Tool, broker.StatusInterrupted,
			fmt.Errorf("the daemon stopped before the run (started %s) finished", e.Start.UTC().Format(time.RFC3339)))
		a.Client = e.Client
		lines = append(lines, a.Line())
	}
	if len(lines) > 0 {
		if err := audit.Append(bytes.Join(lines, nil)); err != nil {
			return 0, rep, err
		}
	}
	return len(lines), rep, auditlog.WriteSynced(journalPath, nil)
}

// readJournal reads the journal's entries; a line that is not an entry (a torn last line from a
// crash mid-write, or an oversize one) is skipped and counted: a run is only started once its
// entry is whole on disk.
func readJournal(path string) ([]journalEntry, lineReport, error) {
	var rep lineReport
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, rep, nil
	}
	if err != nil {
		return nil, rep, err
	}
	defer f.Close()
	var out []journalEntry
	err = eachLine(f, MaxRecoveryLine, func(line []byte, whole bool) {
		var e journalEntry
		switch {
		case !whole:
			rep.Oversize++
		case json.Unmarshal(line, &e) != nil || e.RunID == "":
			rep.Corrupt++
		default:
			out = append(out, e)
		}
	})
	return out, rep, err
}

// auditedRuns is the set of run ids that have a line in the audit file. An oversize line still
// counts when its run_id is within its first MaxRecoveryLine bytes.
func auditedRuns(path string) (map[string]bool, lineReport, error) {
	var rep lineReport
	done := map[string]bool{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return done, rep, nil
	}
	if err != nil {
		return nil, rep, err
	}
	defer f.Close()
	err = eachLine(f, MaxRecoveryLine, func(line []byte, whole bool) {
		if !whole {
			rep.Oversize++
		}
		if id := runIDOf(line); id != "" {
			done[id] = true
		} else if whole && len(bytes.TrimSpace(line)) > 0 {
			rep.Corrupt++
		}
	})
	return done, rep, err
}
