package host

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// pythonRunaways are Python tools that try to run forever or take the interpreter down. Each must
// end with one of the statuses given, one audit line and no crash dump in the log; the time each
// takes past the deadline is logged (go test -v -run TestPythonRunaways) and BENCHMARKS.md
// records it. Catching an exception does not help a tool: the deadline ends the instance.
var pythonRunaways = []struct {
	name string
	py   string
	want []broker.Status
}{
	{"empty loop", "while True: pass", timeout},
	{"loop inside try/except BaseException", "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass", timeout},
	{"loop swallowing raised errors", "while True:\n    try:\n        raise ValueError('x')\n    except Exception:\n        pass", timeout},
	{"finally that loops", "try:\n    raise ValueError('x')\nfinally:\n    while True: pass", timeout},
	{"catastrophic regex", "import re\nreturn bool(re.match(r'^(a+)+$', 'a' * 40 + 'b'))", timeout},
	{"exponential regex with a backreference", "import re\nreturn bool(re.match(r'^(\\w+\\s?)*\\1$', 'ab ' * 30 + '!'))", timeout},
	{"catastrophic regex, sub", "import re\nreturn re.sub(r'(a|aa)+$', '', ('a' * 30 + '!') * 100)", timeout},
	{"10**10**8", "return 10**10**8 % 7", timeoutOrLimit},
	{"str of a huge int", "import sys\nsys.set_int_max_str_digits(0)\nreturn len(str(10**(10**7)))", timeoutOrLimit},
	{"'x' * 10**10 (too big for wasm32: OverflowError at once)", "return len('x' * 10**10)", errorOnly},
	{"'x' * (2**31 - 2)", "return len('x' * (2**31 - 2))", limitOnly},
	{"deep recursion after setrecursionlimit(10**6)", "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1) + 1\nreturn f(0)", timeoutOrLimit},
	{"deep recursion caught and retried", "def f(n):\n    return f(n + 1) + 1\nwhile True:\n    try:\n        f(0)\n    except RecursionError:\n        pass", timeout},
	{"generator loop", "def g():\n    while True:\n        yield 1\nfor x in g(): pass", timeout},
	{"__del__ that loops", "class A:\n    def __del__(self):\n        while True: pass\nA()\nreturn 1", timeout},
	{"sorted of a huge list, forever", "import random\na = [random.random() for _ in range(300000)]\nwhile True:\n    sorted(a)", timeout},
	{"sorted with a looping key", "return sorted([3, 2, 1], key=lambda x: [0 for _ in iter(int, 1)])", timeoutOrLimit},
	{"json.dumps of a deep structure", "import json\no = []\nfor _ in range(10**5):\n    o = [o]\nreturn len(json.dumps(o))", timeoutOrLimit},
	{"json.loads of a deep structure", "import json\nreturn json.loads('[' * 10**6 + ']' * 10**6)", limitOnly},
	{"await loop", "import asyncio\nwhile True:\n    await asyncio.sleep(0)", timeout},
	{"asyncio.sleep past the deadline", "import asyncio\nawait asyncio.sleep(3600)", timeout},
	{"time.sleep loop", "import time\nwhile True:\n    time.sleep(0.01)", timeout},
	{"task flood", "import asyncio\nasync def f():\n    asyncio.ensure_future(f()); asyncio.ensure_future(f())\nawait f()\nawait asyncio.Event().wait()", timeoutOrLimit},
	{"exec loop", "while True:\n    exec('1 + 1')", timeout},
	{"memory bomb", "keep = []\nwhile True:\n    keep.append(bytearray(1 << 20))", limitOnly},
	{"memory bomb, MemoryError caught", "keep = []\nwhile True:\n    try:\n        keep.append(bytearray(1 << 20))\n    except MemoryError:\n        pass", timeoutOrLimit},
	{"decimal at a huge precision", "import decimal\ndecimal.getcontext().prec = 10**8\nreturn str(decimal.Decimal(1) / decimal.Decimal(7))[:5]", timeoutOrLimit},
	{"log flood", "while True:\n    print('x' * 1000)", limitOnly},
	{"output flood", "return 'x' * (64 << 20)", limitOnly},
	{"os._exit", "import os\nos._exit(0)", errorOnly},
	{"waits for nothing", "import asyncio\nawait asyncio.get_running_loop().create_future()", errorOnly},
}

var errorOnly = []broker.Status{broker.StatusError}

func TestPythonRunaways(t *testing.T) {
	rt := shared(t)
	require.NoError(t, rt.PreparePython()) // the interpreter's first start is not a runaway's time
	ps := newPetstore(t)
	p := profile(t, ps.URL, runawayProfileYAML())
	for _, tc := range pythonRunaways {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := rt.Run(context.Background(), PythonTool("runaway.py", tc.py), p, nil)
			took := time.Since(start)
			t.Logf("status %s after %s (%+dms past the deadline): %v", res.Audit.Status, took.Round(time.Millisecond),
				(took - runawayTimeout).Milliseconds(), res.Err)
			require.Contains(t, tc.want, res.Audit.Status, "err: %v\nlog tail: %s", res.Err, tail(res.Log))
			require.Error(t, res.Err)
			require.NotEmpty(t, res.Audit.RunID, "one audit line")
			require.Equal(t, res.Err.Error(), res.Audit.Error)
			for _, m := range crashMarkers {
				require.NotContains(t, string(res.Log), m, "a crash dump in the log")
				require.NotContains(t, res.Err.Error(), m, "a crash in the error")
			}
		})
	}
}
