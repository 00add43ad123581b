package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
)

// Slow and stalled clients, on raw sockets: a reader that never reads, a writer that never
// finishes its body.

// chatty is a profile whose runs may log 64 MiB and run for minutes: a stalled reader of its
// stream is the run's only brake.
func chatty(t *testing.T, up *upstream) option {
	return func(c *server.Config) {
		writeProfile(t, c.ProfilesDir, "chatty", up.URL, "limits:\n  max_log_bytes: 64MiB\n  max_output_bytes: 64MiB\n  run_timeout: 10m\n")
	}
}

// rawPost opens a connection with a small receive buffer and sends a POST /v1/runs with body,
// as agent-b; it reads nothing.
func rawPost(t *testing.T, d *daemon, accept, body string) net.Conn {
	t.Helper()
	conn, err := (&net.Dialer{Control: smallReceiveBuffer}).Dial("tcp", strings.TrimPrefix(d.api, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n%s",
		tokenB, accept, len(body), body)
	return conn
}

// auditedRuns counts the audit lines whose tool ran code (by status).
func auditedStatuses(t *testing.T, d *daemon, profile string) map[string]int {
	out := map[string]int{}
	for _, l := range auditLines(t, d.auditFile) {
		if l["profile"] == profile {
			out[l["status"].(string)]++
		}
	}
	return out
}

// floodLog writes 24 MiB of log: more than a client's 64 KiB receive buffer and the daemon's send
// buffer hold together, even where TCP send buffers are tuned up to 16 MiB.
var floodLog = fmt.Sprintf(`for (let i = 0; i < %d; i++) console.log("x".repeat(80000)); return 1`, floodLines)

const floodLines = 300

// A client that asks for NDJSON, or for an 8 MiB JSON answer, and never reads: each run still
// ends by itself and is audited, its slot is free for the next run at once, and the NDJSON
// stream, read at last, says it was cut and ends with the result.
func TestSlowReadersHoldNoRunSlotOrDrain(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, chatty(t, up), func(c *server.Config) { c.MaxRuns, c.Queue = 1, -1 })

	stream := rawPost(t, d, server.MediaNDJSON, fmt.Sprintf(`{"profile":"chatty","code":%q}`, floodLog))
	eventually(t, func() bool { return auditedStatuses(t, d, "chatty")["ok"] == 1 }, "the unread NDJSON run's audit line")
	resp, b := d.do("POST", "/v1/runs", tokenB, run("petstore", "return 2"))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the slot after the unread NDJSON run: %s", b)

	big := rawPost(t, d, "application/json", `{"profile":"chatty","code":"return \"y\".repeat(8 << 20)"}`)
	eventually(t, func() bool {
		return len(auditedStatuses(t, d, "chatty")) > 1 || auditedStatuses(t, d, "chatty")["ok"] == 2
	}, "the unread JSON run's audit line")
	require.Equal(t, map[string]int{"ok": 2}, auditedStatuses(t, d, "chatty"))
	resp, b = d.do("POST", "/v1/runs", tokenB, run("petstore", "return 3"))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the slot after the unread JSON run: %s", b)
	big.Close()

	// The NDJSON stream, read at last: lines, one cut line, then the result.
	stream.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a failure bound, not a timing assertion
	sr, err := http.ReadResponse(bufio.NewReader(stream), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sr.StatusCode)
	assert.NotEmpty(t, sr.Header.Get(server.HeaderRunID))
	types := map[string]int{}
	var last map[string]any
	dec := json.NewDecoder(sr.Body)
	for {
		var line map[string]any
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		types[line["type"].(string)]++
		last = line
	}
	assert.Equal(t, 1, types["cut"], "%v", types)
	assert.Less(t, types["log"], floodLines, "some log lines were dropped")
	assert.Equal(t, "result", last["type"])
	assert.Equal(t, "ok", last["status"])
	assert.Equal(t, sr.Header.Get(server.HeaderRunID), last["run_id"])
}

// A body that stops half-way is cut at the body deadline with 408; the handler is free again.
func TestSlowBodiesAreBounded(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.BodyTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.api, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"profile\":", tokenB)
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // a failure bound: without a body deadline nothing comes
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer to a stalled body")
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), "did not arrive within 300ms")
	assert.Equal(t, http.StatusOK, d.status("POST", "/v1/runs", tokenB, run("petstore", "return 1")))
}

// A drain with stalled readers (unread NDJSON streams of runs that never end by themselves) and
// stalled writers (bodies stopped half-way) ends once the drain deadline and its grace pass:
// Run returns, and every run that started has exactly one audit line.
func TestDrainWithStalledClients(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, chatty(t, up), func(c *server.Config) { c.Drain, c.MaxRuns, c.Queue = time.Second, 8, 8 })
	const n = 4
	for range n {
		rawPost(t, d, server.MediaNDJSON, fmt.Sprintf(`{"profile":"chatty","code":%q}`, `for (let i = 0; i < 100; i++) console.log("x".repeat(80000)); await api.get("/block"); return 1`))
		conn, err := net.Dial("tcp", strings.TrimPrefix(d.api, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", tokenB)
	}
	up.waitArrived(t, n)
	require.NoError(t, d.shutdown()) // fails the test if the daemon does not stop (see shutdown)
	st := auditedStatuses(t, d, "chatty")
	total := 0
	for _, c := range st {
		total += c
	}
	assert.Equal(t, n, total, "one audit line per started run: %v", st)
	assert.Zero(t, st["ok"], "the held runs were cancelled by the drain: %v", st)
}
