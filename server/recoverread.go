package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// MaxRecoveryLine is the most of one line crash recovery keeps: a longer line in the audit file
// or the journal (written by an older daemon, or by hand) is read past, its first
// MaxRecoveryLine bytes kept, and reported; it never stops the daemon from starting.
const MaxRecoveryLine = 1 << 20

// lineReport counts the lines recovery could not read whole.
type lineReport struct {
	Oversize int // lines over MaxRecoveryLine, read from their first MaxRecoveryLine bytes
	Corrupt  int // lines that are not the JSON they should be, skipped
}

func (r lineReport) add(o lineReport) lineReport {
	return lineReport{Oversize: r.Oversize + o.Oversize, Corrupt: r.Corrupt + o.Corrupt}
}

func (r lineReport) skipped() int { return r.Oversize + r.Corrupt }

// eachLine calls fn with every line of rd, without its newline; a line over max is given cut
// to its first max bytes, with whole false. Memory stays within max plus the reader's buffer,
// whatever the lines' length.
func eachLine(rd io.Reader, max int, fn func(line []byte, whole bool)) error {
	br := bufio.NewReaderSize(rd, 64<<10)
	var line []byte
	seen := 0 // bytes of the current line read so far, newline included
	for {
		chunk, err := br.ReadSlice('\n')
		seen += len(chunk)
		if room := max - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		content := seen
		if bytes.HasSuffix(chunk, []byte("\n")) {
			content--
		}
		if seen > 0 {
			fn(bytes.TrimSuffix(line, []byte("\n")), content <= max)
		}
		if err != nil { // io.EOF
			return nil
		}
		line, seen = line[:0], 0
	}
}

// runIDOf reads the run_id of a line's top-level object, from as much of the line as there
// is: a line cut short still names its run when run_id comes before the cut.
func runIDOf(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "run_id" {
			var id string
			if dec.Decode(&id) != nil {
				return ""
			}
			return id
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// reportRecovery tells the operator, on stderr and in plimsoll_recovery_skipped_lines_total,
// about the lines crash recovery could not read whole.
func (s *Server) reportRecovery(rep lineReport, journal string) {
	if rep.skipped() == 0 {
		return
	}
	s.metrics.recoverySkipped.WithLabelValues("oversize").Add(float64(rep.Oversize))
	s.metrics.recoverySkipped.WithLabelValues("corrupt").Add(float64(rep.Corrupt))
	s.log.Warn("crash recovery read past lines it could not read whole: a run whose journal entry is among them is not audited as interrupted",
		"oversize", rep.Oversize, "corrupt", rep.Corrupt, "max_line_bytes", MaxRecoveryLine, "audit", s.cfg.AuditFile, "journal", journal)
}
