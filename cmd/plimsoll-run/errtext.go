package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plimsoll/plimsoll/host"
)

// engineLimitPrefix starts the line the JS engine writes last when it stops a tool at a limit;
// the host's error says the same in its own words.
const engineLimitPrefix = "plimsoll: limit: "

// logWithoutReason is the run log as shown above the CLI's error line: without its tail when
// that tail is the error itself (a thrown error and its stack, or the engine's limit line), so
// an error prints once.
func logWithoutReason(log []byte, err error) []byte {
	if err == nil {
		return log
	}
	trimmed := bytes.TrimRight(log, "\n")
	reason := strings.TrimPrefix(err.Error(), "tool failed: ")
	if reason != "" && bytes.HasSuffix(trimmed, []byte(reason)) {
		return trimLog(trimmed[:len(trimmed)-len(reason)])
	}
	lastStart := bytes.LastIndexByte(trimmed, '\n') + 1
	if bytes.HasPrefix(trimmed[lastStart:], []byte(engineLimitPrefix)) && (errors.Is(err, host.ErrLimit) || errors.Is(err, host.ErrTimeout)) {
		return trimLog(trimmed[:lastStart])
	}
	return log
}

// trimLog ends a non-empty log with one newline.
func trimLog(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return nil
	}
	return append(b, '\n')
}

// runError is the CLI's one line for a failed run; a deadline set by --timeout is named as such,
// in the words the profile's run_timeout gets.
func runError(err error, timeout time.Duration) string {
	var te *host.TimeoutError
	if errors.As(err, &te) && te.Limit == "" && timeout > 0 {
		return fmt.Sprintf("run timed out: --timeout (%s) passed", timeout)
	}
	return err.Error()
}

// jsonPosition names where data stops being JSON: "line L, column C: reason".
func jsonPosition(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	before := data[:min(int(se.Offset), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1)
	return fmt.Errorf("line %d, column %d: %s", line, max(col, 1), se.Error())
}
