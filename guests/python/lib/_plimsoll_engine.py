"""plimsoll's Python engine: runs one tool per instance (guests/python/doc.go has the contract).

Imported once, while the host takes its snapshot of the started interpreter, so the modules tools
use are loaded and warm before any run. run() is called by the reactor's run export: it reads the
request on stdin, arms the run's deadline (once; _plimsoll refuses a second time), runs the tool
on an asyncio loop whose selector is the host's host_wait, and writes the result on stdout. A
"preload" request runs a profile's preamble instead, once, in a template the host then snapshots
(host/pythonpreload.go); runs restored from it name it in "preloaded".
"""

import ast
import asyncio
import json
import linecache
import math
import os
import random
import sys
import time
import traceback

import _plimsoll
import plimsoll

# The modules tools use most, loaded before the snapshot: importing them later costs each run.
import base64, binascii, bisect, collections, copy, csv, dataclasses, datetime, decimal, enum  # noqa: E401,F401
import fractions, functools, hashlib, heapq, hmac, io, itertools, operator, re, statistics  # noqa: E401,F401
import string, textwrap, typing, urllib.parse, uuid, zlib, zoneinfo  # noqa: E401,F401

RUN_OK, RUN_FAILED, RUN_LIMITED = 0, 1, 2
LIMIT_PREFIX = "plimsoll: limit: "
LIMIT_MEMORY = "out of memory (the memory limit was reached)"
LIMIT_STACK = "call stack depth exceeded"
REQUEST_FIELDS = ("tool", "input", "preamble", "name", "deadline_unix_ms", "preload", "preloaded")
TOOL_FUNCTION = "<tool>"

_real_stdout = sys.stdout

# CPython's time.sleep waits until an absolute time, which the host does not offer: sleep
# relative to now instead (the host still ends every sleep at the run's deadline).
time.sleep = _plimsoll.sleep


class RequestError(Exception):
    """The host's request on stdin is malformed."""


def _no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise RequestError(f"duplicate key {k!r}")
        obj[k] = v
    return obj


def read_request(raw):
    """The run's request: {"tool", "input", "preamble", "name", "deadline_unix_ms"}, strictly."""
    try:
        req = json.loads(raw, object_pairs_hook=_no_duplicates)
    except ValueError as e:
        raise RequestError(f"the request is not JSON: {e}") from None
    if not isinstance(req, dict):
        raise RequestError("the request is not a JSON object")
    for key in req:
        if key not in REQUEST_FIELDS:
            raise RequestError(f"unknown field {key!r} (known: {', '.join(REQUEST_FIELDS)})")
    for key, kind in (("tool", str), ("preamble", str), ("name", str), ("deadline_unix_ms", (int, float)),
                      ("preload", str), ("preloaded", str)):
        if key in req and (not isinstance(req[key], kind) or isinstance(req[key], bool)):
            raise RequestError(f"field {key!r} has the wrong type")
    if "preload" in req:
        if set(req) != {"preload", "preamble"}:
            raise RequestError("a preload request has the fields 'preload' and 'preamble' only")
    elif "tool" not in req:
        raise RequestError("field 'tool' is required")
    if "preloaded" in req:
        if req.get("preamble"):
            raise RequestError("a request names a preloaded preamble or brings one, not both")
        if _preloaded is None or _preloaded[0] != req["preloaded"]:
            raise RequestError(f"the preamble {req['preloaded']!r} is not preloaded in this instance")
    return req


# ---- the loop: asyncio with the host as its selector ----


class _HostSelector:
    """What BaseEventLoop waits on: calls in flight at the host, else a real sleep.

    Calls are submitted when they are made; when limits.max_inflight are held, more wait in
    order and go as room frees up. A completed call's future gets its response envelope.
    """

    def __init__(self):
        self.pending = {}  # id -> future
        self.queue = []  # (envelope bytes, future), waiting for room at the host

    def submit(self, data, fut):
        if not self.queue and self._try(data, fut):
            return
        self.queue.append((data, fut))

    def _try(self, data, fut):
        id_ = _plimsoll.submit(data)
        if id_ == _plimsoll.ERR_INFLIGHT:
            return False
        self.pending[id_] = fut
        return True

    def select(self, timeout):
        if self.pending:
            ms = -1 if timeout is None else math.ceil(timeout * 1000)
            for id_ in _plimsoll.wait(ms):
                fut = self.pending.pop(id_)
                data = _plimsoll.result(id_)
                if not fut.done():
                    try:
                        fut.set_result(plimsoll.Response(json.loads(data)))
                    except Exception as e:  # a response the client cannot read is the call's error
                        fut.set_exception(e)
            while self.queue and self._try(*self.queue[0]):
                self.queue.pop(0)
        elif timeout is None:
            raise RuntimeError("the tool waits for something that cannot happen: no call is in flight and no timer is set")
        elif timeout > 0:
            time.sleep(timeout)  # the host ends a sleep at the run's deadline
        return ()

    def close(self):
        pass


class Loop(asyncio.BaseEventLoop):
    """An event loop whose only events are plimsoll calls completing and timers."""

    def __init__(self):
        super().__init__()
        self._selector = _HostSelector()

    def _process_events(self, event_list):
        pass

    def _write_to_self(self):
        pass

    async def send(self, env):
        """Make one call and return its Response. A call awaited while nothing else can run (no
        ready task, no timer, no other call) waits for the host right here, without a loop cycle:
        the common sequential `await api.get(...)` costs a third as much."""
        data = json.dumps(env, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        fut = self.create_future()
        sel = self._selector
        sel.submit(data, fut)
        while not fut.done() and not self._ready and not self._scheduled and len(sel.pending) == 1 and not sel.queue:
            sel.select(None)
        return await fut


loop = Loop()
asyncio.set_event_loop(loop)
api = plimsoll.Api(loop.send)


# ---- the tool ----


def compile_tool(source, name):
    """The tool as the body of an async function of input and api, keeping its line numbers."""
    tree = ast.parse(source, filename=name)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and not _inside_function(tree, node):
            raise SyntaxError("'yield' outside a function: a tool returns its result", (name, node.lineno, node.col_offset + 1, None))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg="input"), ast.arg(arg="api")], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    fn = ast.AsyncFunctionDef(name="__tool__", args=args, body=tree.body or [ast.Pass()], decorator_list=[],
                              returns=None, type_params=[], lineno=1, col_offset=0)
    mod = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(mod)
    code = compile(mod, name, "exec", dont_inherit=True)
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return code


def _inside_function(tree, target):
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        if node is target:
            return inside
        inner = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return False


def make_tool(source, name, preamble, scope):
    """The tool's coroutine function, with the per-API preamble run first in the same globals."""
    if preamble:
        exec(compile(preamble, "preamble.py", "exec", dont_inherit=True), scope)
    exec(compile_tool(source, name), scope)
    fn = scope.pop("__tool__")
    fn.__code__ = fn.__code__.replace(co_name=TOOL_FUNCTION, co_qualname=TOOL_FUNCTION)
    return fn


def write_result(value):
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def report(exc, name):
    """The traceback from the tool's first frame on (the engine's own frames say nothing)."""
    tb = exc.__traceback__
    t = tb
    while t is not None and t.tb_frame.f_code.co_filename != name:
        t = t.tb_next
    te = traceback.TracebackException(type(exc), exc, t if t is not None else tb, compact=True)
    sys.stderr.write("".join(te.format()))


def _new_scope():
    return {"__name__": "__main__", "__builtins__": __builtins__, "api": api}


# (key, scope): a preamble run once by a preload request, outside any run, whose state the host
# snapshots; runs restored from that snapshot name the key and start from the scope.
_preloaded = None


def _preload(req):
    """Run a profile's preamble once, before any run, into the scope its runs will start from.
    Anything it logs or raises makes it unfit: the host then has each run evaluate it as before."""
    global _preloaded
    if _preloaded is not None:
        sys.stderr.write("plimsoll: bad request from the host: a preamble is preloaded already\n")
        return RUN_FAILED
    scope = _new_scope()
    try:
        exec(compile(req["preamble"], "preamble.py", "exec", dont_inherit=True), scope)
    except BaseException as e:
        sys.stderr.write("".join(traceback.format_exception_only(e)))
        return RUN_FAILED
    _preloaded = (req["preload"], scope)
    return RUN_OK


def _run(req):
    name = req.get("name") or "tool.py"
    scope = _preloaded[1] if "preloaded" in req else _new_scope()
    try:
        tool = make_tool(req["tool"], name, req.get("preamble", ""), scope)
    except SyntaxError as e:
        sys.stderr.write("".join(traceback.format_exception_only(e)))
        return RUN_FAILED
    try:
        result = loop.run_until_complete(tool(req.get("input"), api))
        write_result(result)
        return RUN_OK
    except MemoryError as e:
        report(e, name)
        sys.stderr.write(LIMIT_PREFIX + LIMIT_MEMORY + "\n")
        return RUN_LIMITED
    except RecursionError as e:
        report(e, name)
        sys.stderr.write(f"{LIMIT_PREFIX}{LIMIT_STACK} (RecursionError: {e})\n")
        return RUN_LIMITED
    except SystemExit as e:
        sys.stderr.write(f"SystemExit: the tool called exit({e.code!r}); return a result instead\n")
        return RUN_FAILED
    except BaseException as e:
        report(e, name)
        return RUN_FAILED


def run():
    """One run: the reactor's run export calls this once per instance."""
    raw = bytearray()
    while chunk := os.read(0, 1 << 16):
        raw += chunk
    try:
        req = read_request(bytes(raw))
    except RequestError as e:
        sys.stderr.write(f"plimsoll: bad request from the host: {e}\n")
        return RUN_FAILED
    if "preload" in req:  # not a run: no deadline to arm (the host bounds it), no tool
        sys.stdout = sys.stderr
        try:
            return _preload(req)
        finally:
            sys.stdout = _real_stdout
    _plimsoll.arm(float(req.get("deadline_unix_ms", 0)))
    random.seed()  # the snapshot's generator state is every run's: draw a fresh seed
    sys.stdout = sys.stderr  # print() goes to the run's log; stdout carries the result only
    try:
        return _run(req)
    finally:
        sys.stdout = _real_stdout


def _warm():
    """Run a small tool through the loop once, so the snapshot holds warm code paths."""
    scope = {"__name__": "__main__", "__builtins__": __builtins__, "api": api}
    tool = make_tool("import json, re\nawait asyncio.sleep(0)\nreturn json.loads(json.dumps({'a': re.findall(r'\\d', input)}))",
                     "warm.py", "", dict(scope, asyncio=asyncio))
    loop.run_until_complete(tool("a1b2", api))
    linecache.cache.pop("warm.py", None)


_warm()
