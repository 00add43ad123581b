package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// runPython runs a Python tool on the shared runtime against a fresh petstore.
func runPython(t *testing.T, src string, input string, extra string) (Result, *petstore) {
	t.Helper()
	ps := newPetstore(t)
	p := profile(t, ps.URL, extra)
	return shared(t).Run(context.Background(), PythonTool("tool.py", src), p, []byte(input)), ps
}

func TestPythonToolRunsThroughTheBroker(t *testing.T) {
	res, ps := runPython(t, `
print("fetching", input["id"])
r = await api.get("/pets/" + input["id"])
denied = await api.get("/owners/1")
return {"status": r.status, "ok": r.ok, "pet": r.json(), "outcome": r.outcome,
        "type": r.headers["content-type"], "denied": [denied.status, denied.outcome]}
`, `{"id": "42"}`, "")
	require.NoError(t, res.Err, "log: %s", res.Log)
	var out map[string]any
	require.NoError(t, json.Unmarshal(res.Output, &out), "output: %s", res.Output)
	require.Equal(t, map[string]any{"status": 200.0, "ok": true, "pet": map[string]any{"id": "42", "name": "Rex"},
		"outcome": "forwarded", "type": "application/json", "denied": []any{403.0, "denied"}}, out)
	require.Equal(t, "fetching 42\n", string(res.Log), "print goes to the log; stdout carries only the result")
	require.Len(t, res.Trace, 2)
	require.Equal(t, broker.Forwarded, res.Trace[0].Outcome)
	require.Equal(t, broker.Denied, res.Trace[1].Outcome)
	require.Equal(t, broker.StatusOK, res.Audit.Status)
	require.Equal(t, 2, res.Audit.HostCalls)
	require.Equal(t, "tool.py", res.Audit.Tool)
	require.Equal(t, int64(1), ps.requests.Load(), "the denied call never reached the upstream")
	require.Equal(t, []string{"Bearer " + secret}, ps.auth, "the broker added the credential")
}

func TestPythonToolBodiesAndMethods(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s?%s %s %s", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body))
		mu.Unlock()
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte{0xff, 0x00, 'x'})
	}))
	t.Cleanup(up.Close)
	p := profile(t, up.URL, "  - POST /things\n  - PUT /things/*\n  - PATCH /things/*\n  - DELETE /things/*\n")
	res := shared(t).Run(context.Background(), PythonTool("bodies.py", `
a = await api.post("/things", {"n": 1, "s": "é"}, query={"tag": ["a b", "c/d"], "n": 2, "flag": True, "none": None})
b = await api.put("/things/1", "plain text", headers={"Content-Type": "text/plain"})
c = await api.patch("/things/1", b"\xff\x00")
d = await api.delete("/things/1?x=1", query={"y": 2})
return [a.status, a.ok, a.header_values("x-multi"), a.headers["x-multi"], list(c.bytes()), d.status]
`), p, nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	require.JSONEq(t, `[418, false, ["a", "b"], "a, b", [255, 0, 120], 418]`, string(res.Output))
	require.Equal(t, []string{
		`POST /v1/things?tag=a%20b&tag=c%2Fd&n=2&flag=true application/json {"n":1,"s":"é"}`,
		"PUT /v1/things/1? text/plain plain text",
		"PATCH /v1/things/1?  \xff\x00",
		"DELETE /v1/things/1?x=1&y=2  ",
	}, seen)
}

// TestPythonGatherOverlaps proves calls under a TaskGroup and asyncio.gather are in flight
// together: the upstream answers none until all five have arrived, so calls made one at a time
// would never finish.
func TestPythonGatherOverlaps(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "%q", r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p := profile(t, up.URL, "limits:\n  run_timeout: 60s\n")
	res := shared(t).Run(context.Background(), PythonTool("gather.py", `
import asyncio
async def slow():
    await asyncio.sleep(0.01)
    return "slept"
async with asyncio.TaskGroup() as tg:
    first = [tg.create_task(api.get(f"/pets/{i}")) for i in range(2)]
    t1 = tg.create_task(slow())
    rest = await asyncio.gather(*(api.get(f"/pets/{i}") for i in range(2, 5)))
rs = [t.result() for t in first] + rest
return [r.json() for r in rs] + [t1.result()]
`), p, nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	require.JSONEq(t, `["/v1/pets/0", "/v1/pets/1", "/v1/pets/2", "/v1/pets/3", "/v1/pets/4", "slept"]`, string(res.Output))
	require.Len(t, res.Trace, n)
	for i, e := range res.Trace {
		require.Equal(t, i+1, e.Seq, "seq is submission order")
	}
}

// TestPythonInflightCap: more calls than limits.max_inflight wait in the guest, in order; none is
// refused and the upstream never sees more than the cap at once.
func TestPythonInflightCap(t *testing.T) {
	var mu sync.Mutex
	cur, peak := 0, 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // an upstream's latency; no verdict depends on it
		mu.Lock()
		cur--
		mu.Unlock()
		fmt.Fprint(w, "1")
	}))
	t.Cleanup(up.Close)
	p := profile(t, up.URL, "limits:\n  max_inflight: 2\n  run_timeout: 60s\n")
	res := shared(t).Run(context.Background(), PythonTool("cap.py", `
import asyncio
rs = await asyncio.gather(*(api.get(f"/pets/{i}") for i in range(9)))
return sum(r.json() for r in rs)
`), p, nil)
	require.NoError(t, res.Err, "log: %s", res.Log)
	require.Equal(t, "9", string(res.Output))
	require.Len(t, res.Trace, 9)
	require.LessOrEqual(t, peak, 2)
	for i, e := range res.Trace {
		require.Equal(t, fmt.Sprintf("/pets/%d", i), e.Path, "submitted in order")
	}
}

func TestPythonTracebackNamesToolLines(t *testing.T) {
	res, _ := runPython(t, "x = 1\n\ndef f(a):\n    return a / 0\n\nreturn f(x)\n", "", "")
	require.Error(t, res.Err)
	require.Equal(t, broker.StatusError, res.Audit.Status)
	log := string(res.Log)
	require.Contains(t, log, "Traceback (most recent call last):")
	require.Contains(t, log, `File "tool.py", line 6, in <tool>`)
	require.Contains(t, log, `File "tool.py", line 4, in f`)
	require.Contains(t, log, "return a / 0")
	require.NotContains(t, log, "_plimsoll_engine", "the engine's own frames are left out")
	require.Contains(t, res.Err.Error(), "ZeroDivisionError: division by zero")
}

func TestPythonSyntaxErrorNamesTheLine(t *testing.T) {
	res, _ := runPython(t, "x = 1\nif x\n    return 2\n", "", "")
	require.Error(t, res.Err)
	require.Contains(t, string(res.Log), `File "tool.py", line 2`)
	require.Contains(t, res.Err.Error(), "SyntaxError")
}

func TestPythonResultMustBeJSON(t *testing.T) {
	res, _ := runPython(t, "return {1, 2}", "", "")
	require.Error(t, res.Err)
	require.Contains(t, res.Err.Error(), "Object of type set is not JSON serializable")
	res, _ = runPython(t, "return float('nan')", "", "")
	require.Error(t, res.Err)
	require.Contains(t, res.Err.Error(), "Out of range float values are not JSON compliant")
	res, _ = runPython(t, "pass", "", "")
	require.NoError(t, res.Err)
	require.Equal(t, "null", string(res.Output), "no return is None, null")
}

func TestPythonRunsAreIsolated(t *testing.T) {
	src := `
import random, sys
seen = getattr(sys, "plimsoll_seen", None)
sys.plimsoll_seen = "set by an earlier run"
return [seen, random.random()]
`
	a, _ := runPython(t, src, "", "")
	b, _ := runPython(t, src, "", "")
	require.NoError(t, a.Err, "log: %s", a.Log)
	require.NoError(t, b.Err, "log: %s", b.Log)
	var ra, rb []any
	require.NoError(t, json.Unmarshal(a.Output, &ra))
	require.NoError(t, json.Unmarshal(b.Output, &rb))
	require.Nil(t, ra[0])
	require.Nil(t, rb[0], "nothing of one run reaches the next")
	require.NotEqual(t, ra[1], rb[1], "random is seeded afresh for every run")
}

// TestPythonWalls: the tool's world is the interpreter, the standard library and api.
func TestPythonWalls(t *testing.T) {
	checks := map[string]string{
		"open /etc/passwd":    `open("/etc/passwd").read()`,
		"list the root":       `__import__("os").listdir("/etc")`,
		"write to /lib":       `open("/lib/plimsoll/x.py", "w").write("x")`,
		"a socket":            `__import__("socket").socket()`,
		"subprocess":          `__import__("subprocess").run(["ls"])`,
		"ctypes":              `__import__("ctypes")`,
		"os.system":           `__import__("os").system("ls")`,
		"re-arm the deadline": `__import__("_plimsoll").arm(0)`,
		"threads":             `__import__("threading").Thread(target=print).start()`,
		"urllib to the net":   `__import__("urllib.request").request.urlopen("http://127.0.0.1:1/")`,
		"read the credential": `__import__("os").environ["PETS_TOKEN"]`,
	}
	var src strings.Builder
	src.WriteString("out = {}\n")
	for name, expr := range checks {
		fmt.Fprintf(&src, "try:\n    %s\n    out[%q] = 'allowed'\nexcept BaseException as e:\n    out[%q] = type(e).__name__\n", expr, name, name)
	}
	src.WriteString("import os, sys\nout['environ'] = dict(os.environ)\nout['argv'] = sys.argv\nreturn out\n")
	res, _ := runPython(t, src.String(), "", "")
	require.NoError(t, res.Err, "log: %s", res.Log)
	var out map[string]any
	require.NoError(t, json.Unmarshal(res.Output, &out))
	for name := range checks {
		require.NotEqual(t, "allowed", out[name], "%s was allowed", name)
		require.NotEmpty(t, out[name], name)
	}
	require.Equal(t, map[string]any{}, out["environ"], "no environment")
	require.Equal(t, []any{""}, out["argv"], "no arguments")
	require.Equal(t, "PermissionError", out["re-arm the deadline"])
	require.NotContains(t, string(res.Log)+string(res.Output), secret)
	t.Logf("walls: %v", out)
}

// TestPythonStdlib exercises the modules agents use, each with a small computation.
func TestPythonStdlib(t *testing.T) {
	res, _ := runPython(t, `
import json, re, datetime, math, statistics, decimal, fractions, random, collections, itertools
import functools, operator, string, textwrap, base64, binascii, hashlib, hmac, urllib.parse, uuid
import dataclasses, typing, enum, csv, io, copy, heapq, bisect, zlib, asyncio, zoneinfo

@dataclasses.dataclass
class P:
    x: int
    y: typing.Optional[int] = None

class Color(enum.Enum):
    RED = 1

buf = io.StringIO()
csv.writer(buf).writerow(["a", 1])
try:
    zoneinfo.ZoneInfo("Europe/Paris")
    tz = "found"
except zoneinfo.ZoneInfoNotFoundError as e:
    tz = "ZoneInfoNotFoundError"
h = []
heapq.heappush(h, 3); heapq.heappush(h, 1)
return {
    "json": json.loads('{"a": [1, 2]}'),
    "re": re.sub(r"(\d+)", r"<\1>", "a1b22"),
    "datetime": datetime.datetime(2024, 2, 29, tzinfo=datetime.timezone.utc).isoformat(),
    "math": math.isqrt(10**20), "statistics": statistics.median([3, 1, 2]),
    "decimal": str(decimal.Decimal("0.1") + decimal.Decimal("0.2")),
    "fractions": str(fractions.Fraction(1, 3) * 3), "random": 0 <= random.random() < 1,
    "collections": collections.Counter("abca").most_common(1), "itertools": list(itertools.accumulate([1, 2, 3])),
    "functools": functools.reduce(operator.mul, [1, 2, 3, 4]), "string": string.ascii_lowercase[:3],
    "textwrap": textwrap.shorten("hello world foo", 11), "base64": base64.b64encode(b"hi").decode(),
    "binascii": binascii.hexlify(b"\x01").decode(),
    "sha256": hashlib.sha256(b"abc").hexdigest()[:16], "md5": hashlib.md5(b"abc").hexdigest()[:8],
    "blake2b": hashlib.blake2b(b"abc", digest_size=8).hexdigest(),
    "hmac": hmac.new(b"k", b"m", "sha256").hexdigest()[:8],
    "urllib": urllib.parse.urlencode({"q": "a b"}), "uuid": len(str(uuid.uuid4())),
    "dataclasses": dataclasses.asdict(P(1)), "enum": Color.RED.name, "csv": buf.getvalue(),
    "copy": copy.deepcopy({"a": [1]}), "heapq": h[0], "bisect": bisect.bisect([1, 3, 5], 4),
    "zlib": zlib.decompress(zlib.compress(b"x" * 100)) == b"x" * 100, "zoneinfo": tz,
}
`, "", "")
	require.NoError(t, res.Err, "log: %s", res.Log)
	require.JSONEq(t, `{"json": {"a": [1, 2]}, "re": "a<1>b<22>", "datetime": "2024-02-29T00:00:00+00:00",
		"math": 10000000000, "statistics": 2, "decimal": "0.3", "fractions": "1", "random": true,
		"collections": [["a", 2]], "itertools": [1, 3, 6], "functools": 24, "string": "abc",
		"textwrap": "hello [...]", "base64": "aGk=", "binascii": "01", "sha256": "ba7816bf8f01cfea",
		"md5": "90015098", "blake2b": "d8bb14d833d59559", "hmac": "b60090e3", "urllib": "q=a+b", "uuid": 36,
		"dataclasses": {"x": 1, "y": null}, "enum": "RED", "csv": "a,1\r\n", "copy": {"a": [1]}, "heapq": 1,
		"bisect": 2, "zlib": true, "zoneinfo": "ZoneInfoNotFoundError"}`, string(res.Output))
}
