"""plimsoll's generic Python client, guest ABI v2 (preamble/ABI.md; README.md beside this file).

A Python tool sees one instance of Api as ``api``. Every method checks its arguments at once and
returns a coroutine of a Response, which submits the call when it starts: calls overlap under
asyncio.gather, asyncio.wait or a TaskGroup (they start together, in order), up to the profile's
limits.max_inflight (more wait in the guest, in order). HTTP errors do not raise: a 404, 429 or
503 is a Response with ok False.
"""

import base64 as _base64
import datetime as _datetime
import json as _json
from urllib.parse import quote as _quote

__all__ = ["Api", "Response", "METHODS"]

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_METHOD_SET = frozenset(METHODS)


def _encode(s):
    # Only RFC 3986 unreserved characters stay as they are, as in the JavaScript client.
    return _quote(s, safe="")


def _scalar(what, key, v):
    if isinstance(v, str):
        return v
    if isinstance(v, bool):  # before int: bool is an int
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, (_datetime.datetime, _datetime.date)):
        return v.isoformat()
    raise TypeError(f"api: {what} {key!r} must be a str, int, float, bool, date or a list of them, not {type(v).__name__}")


def encode_query(query):
    """The query string of a str (sent as it is) or a dict (lists repeat the key; None is left out)."""
    if query is None:
        return ""
    if isinstance(query, str):
        return query
    if not isinstance(query, dict):
        raise TypeError(f"api: query must be a str or a dict, not {type(query).__name__}")
    parts = []
    for key, v in query.items():
        if not isinstance(key, str):
            raise TypeError(f"api: query keys must be str, not {type(key).__name__}")
        items = v if isinstance(v, (list, tuple)) else (v,)
        for item in items:
            if item is not None:
                parts.append(_encode(key) + "=" + _encode(_scalar("query parameter", key, item)))
    return "&".join(parts)


def _headers(headers):
    if headers is None:
        return None
    if not isinstance(headers, dict):
        raise TypeError(f"api: headers must be a dict of name -> value, not {type(headers).__name__}")
    out = {}
    for name, v in headers.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            out[name] = [_scalar("header", name, x) for x in v]
        else:
            out[name] = _scalar("header", name, v)
    return out or None


def envelope(method, path, query=None, headers=None, body=None):
    """The request envelope of one call, as the JavaScript client builds it."""
    if not isinstance(method, str):
        raise TypeError("api.call: method must be a str")
    m = method.upper()
    if m not in _METHOD_SET:
        raise ValueError(f"api.call: unsupported method {method!r} (use one of {', '.join(METHODS)})")
    if not isinstance(path, str):
        raise TypeError("api.call: path must be a str")
    q = encode_query(query)
    path, mark, in_path = path.partition("?")
    if mark:
        q = in_path + "&" + q if in_path and q else in_path or q
    env = {"method": m, "path": path}
    if q:
        env["query"] = q
    hdrs = _headers(headers)
    text = b64 = None
    if body is None:
        pass
    elif isinstance(body, str):
        text = body
    elif isinstance(body, (bytes, bytearray, memoryview)):
        b64 = _base64.b64encode(bytes(body)).decode("ascii")
    else:
        text = _json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not any(n.lower() == "content-type" for n in (hdrs or ())):
            hdrs = dict(hdrs or ())
            hdrs["Content-Type"] = "application/json"
    if hdrs is not None:
        env["headers"] = hdrs
    if text is not None:
        env["body"] = text
    elif b64 is not None:
        env["body_base64"] = b64
    return env


class Response:
    """One call's answer: status, ok, outcome, headers, body; text(), json(), bytes()."""

    __slots__ = ("status", "ok", "body", "_env", "_headers")

    def __init__(self, env):
        self._env = env
        self._headers = None
        self.status = env["status"]
        self.ok = 200 <= self.status <= 299
        b64 = env.get("body_base64")
        self.body = _base64.b64decode(b64).decode("utf-8", "replace") if b64 is not None else env.get("body", "")

    @property
    def headers(self):
        """Lower-case name -> value; repeated headers are joined with ", "."""
        if self._headers is None:
            h = {}
            for name, values in (self._env.get("headers") or {}).items():
                lower = name.lower()
                joined = ", ".join(values) if isinstance(values, list) else str(values)
                h[lower] = h[lower] + ", " + joined if lower in h else joined
            self._headers = h
        return self._headers

    @property
    def outcome(self):
        """What plimsoll did with the call: forwarded, shed, denied, over_budget, invalid or failed."""
        return self.headers.get("plimsoll-outcome", "forwarded")

    def header_values(self, name):
        """Every value of a header (any case), as a list; [] when absent."""
        lower = name.lower()
        out = []
        for n, values in (self._env.get("headers") or {}).items():
            if n.lower() == lower:
                out.extend(values if isinstance(values, list) else [values])
        return out

    def text(self):
        return self.body

    def json(self):
        return _json.loads(self.body)

    def bytes(self):
        b64 = self._env.get("body_base64")
        return _base64.b64decode(b64) if b64 is not None else self.body.encode("utf-8")

    def to_dict(self):
        return {"status": self.status, "ok": self.ok, "outcome": self.outcome, "headers": self.headers, "body": self.body}

    def __repr__(self):
        return f"<Response {self.status} {self.outcome}>"


class Api:
    """The tool's way out: every call goes through plimsoll's broker (grant, budget, breaker)."""

    def __init__(self, send):
        self._send = send  # envelope dict -> coroutine of its Response

    def call(self, method, path, *, query=None, headers=None, body=None):
        """Make one call; returns a coroutine of its Response."""
        return self._send(envelope(method, path, query, headers, body))

    def get(self, path, *, query=None, headers=None):
        return self.call("GET", path, query=query, headers=headers)

    def head(self, path, *, query=None, headers=None):
        return self.call("HEAD", path, query=query, headers=headers)

    def post(self, path, body=None, *, query=None, headers=None):
        return self.call("POST", path, query=query, headers=headers, body=body)

    def put(self, path, body=None, *, query=None, headers=None):
        return self.call("PUT", path, query=query, headers=headers, body=body)

    def patch(self, path, body=None, *, query=None, headers=None):
        return self.call("PATCH", path, query=query, headers=headers, body=body)

    def delete(self, path, *, query=None, headers=None):
        return self.call("DELETE", path, query=query, headers=headers)
