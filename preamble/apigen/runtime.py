import json as _json
import math as _math
import re as _re
from urllib.parse import quote as _quote

if not hasattr(api, "call"):
    raise RuntimeError("plimsoll-specgen: load the generic client (api.call) before this one")

_OPS = _json.loads(_OPS_JSON)
_STOP = frozenset(_STOP_WORDS.split())
_CANON = dict(kv.split("=", 1) for kv in _CANON_WORDS.split())
_WEIGHTS = (3, 2.5, 1.5, 1, 1)  # name, summary, path, group, verb: search.go's field bits, in order


def _fail(fn, msg):
    raise ValueError(f"{fn}: {msg}")


def _q(s):
    return _json.dumps(s)


def _scalar(fn, p, v):
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    _fail(fn, f"parameter {_q(p[1])} must be a string, number or boolean" + ("" if p[2] == "path" else ", or a list of them"))


def _pct(s):
    return _quote(s, safe="")


def _path_value(fn, p, v):
    """A path parameter, encoded into its one segment; what the broker's canonical-path rule
    refuses is refused here, before any call."""
    out = []
    for x in v if isinstance(v, (list, tuple)) else (v,):
        s = _scalar(fn, p, x)
        if s == "":
            _fail(fn, f"path parameter {_q(p[1])} must not be empty")
        if s in (".", ".."):
            _fail(fn, f'path parameter {_q(p[1])} must not be "." or ".."')
        if "/" in s or "\\" in s or "%" in s:
            _fail(fn, f'path parameter {_q(p[1])} must not contain "/", "\\" or "%"')
        out.append(_pct(s))
    if not out:
        _fail(fn, f"path parameter {_q(p[1])} must not be empty")
    if p[4] == "label":
        return "." + ("." if p[5] else ",").join(out)
    return ",".join(out)


def _nested(fn, p, name, v, out, depth):
    if depth > 16:
        _fail(fn, f"parameter {_q(p[1])} is nested too deeply")
    if v is None:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            _nested(fn, p, name + "[" + _pct(str(k)) + "]", x, out, depth + 1)
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _nested(fn, p, name + "[" + str(i) + "]", x, out, depth + 1)
    else:
        out.append(name + "=" + _pct(_scalar(fn, p, v)))


def _add_query(fn, q, p, v):
    n, style, explode = p[0], p[4], p[5]
    if p[6]:
        q.append(n + "=" + _pct(_json.dumps(v, separators=(",", ":"))))
    elif style == "deepObject" and isinstance(v, (dict, list, tuple)):
        _nested(fn, p, n, v, q, 0)
    elif isinstance(v, (list, tuple)):
        vals = [_pct(_scalar(fn, p, x)) for x in v]
        if explode:
            q.extend(n + "=" + x for x in vals)
        elif vals:
            q.append(n + "=" + {"spaceDelimited": "%20", "pipeDelimited": "|"}.get(style, ",").join(vals))
    elif isinstance(v, dict):
        if explode:
            q.extend(_pct(str(k)) + "=" + _pct(_scalar(fn, p, x)) for k, x in v.items())
        elif v:
            q.append(n + "=" + ",".join(_pct(str(k)) + "," + _pct(_scalar(fn, p, x)) for k, x in v.items()))
    else:
        q.append(n + "=" + _pct(_scalar(fn, p, v)))


def _header_value(fn, p, v):
    if p[6]:
        s = _json.dumps(v, separators=(",", ":"))
    elif isinstance(v, (list, tuple)):
        s = ",".join(_scalar(fn, p, x) for x in v)
    else:
        s = _scalar(fn, p, v)
    if any(c in s for c in "\r\n\0"):
        _fail(fn, f"header parameter {_q(p[1])} must not contain CR, LF or NUL")
    return s


def _body(fn, b, v):
    kind = b["kind"]
    if kind == "json":
        try:
            return _json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            _fail(fn, f"body cannot be sent as JSON: {e}")
    if kind == "form" and not isinstance(v, str):
        if not isinstance(v, dict):
            _fail(fn, "body must be a dict of form fields, or an encoded string")
        p = ["body", "body", "body", False, "form", True, False]
        pairs = []
        for k, x in v.items():
            if isinstance(x, dict) or k in b.get("deep", ()) or (isinstance(x, (list, tuple)) and any(isinstance(y, (dict, list, tuple)) for y in x)):
                _nested(fn, p, _pct(k), x, pairs, 0)
                continue
            for y in x if isinstance(x, (list, tuple)) else (x,):
                if y is not None:
                    pairs.append(_pct(k) + "=" + _pct(_scalar(fn, p, y)))
        return "&".join(pairs)
    if kind == "raw" and isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if not isinstance(v, str):
        _fail(fn, f"body must be a str for {b['media']}")
    return v


def _operation(op):
    fn = "api." + op["fn"]
    params = op["params"]
    keys = {p[1]: p for p in params}

    def call(args=None, /, **kw):
        a = dict(args or {})
        a.update(kw)
        for k in a:
            if k not in keys and not (k == "body" and op.get("body")):
                _fail(fn, f"unknown parameter {_q(k)}")
        for p in params:
            if p[3] and a.get(p[1]) is None:
                _fail(fn, f"missing required parameter {_q(p[1])}")
        b = op.get("body")
        if b and b["required"] and a.get("body") is None:
            _fail(fn, "missing required body")
        path = []
        for piece in op["path"]:
            if isinstance(piece, str):
                path.append(piece)
            else:
                path.append(_path_value(fn, params[piece], a[params[piece][1]]))
        q, headers = [], {}
        for p in params:
            v = a.get(p[1])
            if v is None or p[2] == "path":
                continue
            if p[2] == "query":
                _add_query(fn, q, p, v)
            else:
                headers[p[0]] = _header_value(fn, p, v)
        body = None
        if b and a.get("body") is not None:
            body = _body(fn, b, a["body"])
            headers["Content-Type"] = b["media"]
        p = "".join(path)
        if q:
            p += "?" + "&".join(q)
        return api.call(op["method"], p, headers=headers or None, body=body)

    call.__name__ = call.__qualname__ = op["fn"]
    call.__doc__ = op["summary"]
    return call


def _stem(w):
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _words(text):
    """Canonical search words, by the rules of search.go searchWords and runtime.js words."""
    s = _re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(text))
    s = _re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", s)
    out = []
    for w in _re.split(r"[^A-Za-z0-9]+", s):
        if not w:
            continue
        w = w.lower()
        if w in _STOP:
            continue
        w = _CANON.get(w, w)
        w = _stem(w)
        out.append(_CANON.get(w, w))
    return out


_BY_NAME = {op["fn"]: k for k, op in enumerate(_OPS)}


def _search(text, limit=5):
    """The operations that best match text, best first: fn, http, summary, sig."""
    if not isinstance(text, str):
        raise TypeError("api.search: pass the words to look for as a str")
    limit = max(1, min(20, int(limit)))
    q = list(dict.fromkeys(_words(text)))
    n_ops = len(_OPS)
    hits = {}
    for w in q:
        lst = _POSTINGS.get(w)
        if not lst:
            continue
        idf = _math.log(1 + n_ops / len(lst))
        for k, mask in lst:
            h = hits.setdefault(k, [0.0, 0, 0, 0])
            f = 0
            while f < len(_WEIGHTS) and not mask & (1 << f):
                f += 1
            h[0] += _WEIGHTS[f] * idf
            h[1] += 1
            h[2] += 1 if mask & 1 else 0
            h[3] += 1 if mask & 2 else 0
    direct = _BY_NAME.get(text.strip(), -1)
    if direct >= 0:
        hits.setdefault(direct, [0.0, 0, 0, 0])
    scored = []
    for k, (score, hit, name, summ) in hits.items():
        score = score * (1 + hit) / (1 + len(q))
        nw, sw = _OPS[k]["counts"]
        focus = max(name / nw if nw else 0, summ / sw if sw else 0)
        score *= 0.4 + 0.6 * focus * focus
        if k == direct:
            score += 1000
        if _OPS[k].get("deprecated"):
            score *= 0.7
        scored.append((-score, k))
    scored.sort()
    return [_entry(_OPS[k]) for _, k in scored[:limit]]


def _entry(op):
    e = {"fn": op["fn"], "http": op["method"] + " " + op["route"], "summary": op["summary"], "sig": op["sig"]}
    if op.get("deprecated"):
        e["deprecated"] = True
    return e


def _describe(name):
    """The whole of one operation: its call signature, HTTP route, summary and description."""
    k = _BY_NAME.get(name, -1) if isinstance(name, str) else -1
    if k < 0:
        raise LookupError(f"api.describe: no operation {name!r}; api.search finds them")
    e = _entry(_OPS[k])
    if _OPS[k].get("doc"):
        e["doc"] = _OPS[k]["doc"]
    return e


class _Typed(type(api)):
    """api with the typed methods, each made the first time a tool reaches for it."""

    def __getattr__(self, name):
        k = _BY_NAME.get(name, -1)
        if k < 0:
            raise AttributeError(f"api has no method {name!r}; api.search finds them")
        fn = _operation(_OPS[k])
        setattr(self, name, fn)
        return fn

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_BY_NAME))


_POSTINGS = _json.loads(_POSTINGS_JSON)
api.__class__ = _Typed
api.search = _search
api.describe = _describe
