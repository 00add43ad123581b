"use strict";
if (typeof api !== "object" || api === null || typeof api.call !== "function") {
  throw new Error("plimsoll-specgen: load the generic preamble (api.call) before this one");
}
var own = Object.prototype.hasOwnProperty;

function quote(s) {
  return JSON.stringify(String(s));
}

function fail(fn, msg) {
  throw new Error(fn + ": " + msg);
}

// scalar turns one parameter value into text; only strings, numbers and booleans are values.
function scalar(fn, p, v) {
  switch (typeof v) {
    case "string":
      return v;
    case "number":
    case "boolean":
    case "bigint":
      return String(v);
  }
  fail(fn, "parameter " + quote(p.k) + " must be a string, number or boolean" +
    (p.i === "path" ? "" : ", or an array of them"));
}

// pct percent-encodes everything except the RFC 3986 unreserved characters A-Z a-z 0-9 - . _ ~
function pct(fn, p, s) {
  var e;
  try {
    e = encodeURIComponent(s);
  } catch (err) {
    fail(fn, "parameter " + quote(p.k) + " is not valid Unicode text");
  }
  return e.replace(/[!'()*]/g, function (c) {
    return "%" + c.charCodeAt(0).toString(16).toUpperCase();
  });
}

// pathValue encodes a path parameter so that it stays inside its one segment. Values the
// broker's canonical-path rule refuses are refused here, before any call.
function pathValue(fn, p, v) {
  var items = Array.isArray(v) ? v : [v];
  var out = [];
  for (var i = 0; i < items.length; i++) {
    var s = scalar(fn, p, items[i]);
    if (s === "") {
      fail(fn, "path parameter " + quote(p.k) + " must not be empty");
    }
    if (s === "." || s === "..") {
      fail(fn, "path parameter " + quote(p.k) + " must not be \".\" or \"..\"");
    }
    if (/[\/\\%]/.test(s)) {
      fail(fn, "path parameter " + quote(p.k) + " must not contain \"/\", \"\\\" or \"%\"");
    }
    out.push(pct(fn, p, s));
  }
  if (out.length === 0) {
    fail(fn, "path parameter " + quote(p.k) + " must not be empty");
  }
  if (p.s === "label") {
    return "." + out.join(p.x ? "." : ",");
  }
  return out.join(",");
}

// addQuery appends name=value pairs for one query parameter, per its style and explode.
function addQuery(fn, q, p, v) {
  var n = p.n;
  if (p.j) {
    q.push(n + "=" + pct(fn, p, JSON.stringify(v)));
    return;
  }
  if (Array.isArray(v) && p.s === "deepObject") {
    // deepObject leaves arrays undefined; name[0]=a&name[1]=b is what the APIs that use it read.
    nested(fn, p, n, v, q, 0);
    return;
  }
  if (Array.isArray(v)) {
    var vals = v.map(function (x) { return pct(fn, p, scalar(fn, p, x)); });
    if (p.x) {
      vals.forEach(function (x) { q.push(n + "=" + x); });
    } else if (vals.length > 0) {
      q.push(n + "=" + vals.join(p.s === "spaceDelimited" ? "%20" : p.s === "pipeDelimited" ? "|" : ","));
    }
    return;
  }
  if (typeof v === "object") {
    var keys = Object.keys(v);
    if (p.s === "deepObject") {
      nested(fn, p, n, v, q, 0);
    } else if (p.x) {
      keys.forEach(function (k) { q.push(pct(fn, p, k) + "=" + pct(fn, p, scalar(fn, p, v[k]))); });
    } else if (keys.length > 0) {
      q.push(n + "=" + keys.map(function (k) { return pct(fn, p, k) + "," + pct(fn, p, scalar(fn, p, v[k])); }).join(","));
    }
    return;
  }
  q.push(n + "=" + pct(fn, p, scalar(fn, p, v)));
}

// nested writes an object or array as name[key]=value pairs, to any depth (as Stripe's and
// Rails-style APIs read form fields and deepObject queries): {a: {b: 1}, c: [2]} under n gives
// n[a][b]=1 and n[c][0]=2. null and undefined members are left out.
function nested(fn, p, name, v, out, depth) {
  if (depth > 16) {
    fail(fn, "parameter " + quote(p.k) + " is nested too deeply");
  }
  if (v === undefined || v === null) {
    return;
  }
  if (typeof v !== "object") {
    out.push(name + "=" + pct(fn, p, scalar(fn, p, v)));
    return;
  }
  if (Array.isArray(v)) {
    v.forEach(function (x, i) { nested(fn, p, name + "[" + i + "]", x, out, depth + 1); });
    return;
  }
  Object.keys(v).forEach(function (k) { nested(fn, p, name + "[" + pct(fn, p, k) + "]", v[k], out, depth + 1); });
}

function headerValue(fn, p, v) {
  var s;
  if (p.j) {
    s = JSON.stringify(v);
  } else if (Array.isArray(v)) {
    s = v.map(function (x) { return scalar(fn, p, x); }).join(",");
  } else {
    s = scalar(fn, p, v);
  }
  if (/[\r\n\0]/.test(s)) {
    fail(fn, "header parameter " + quote(p.k) + " must not contain CR, LF or NUL");
  }
  return s;
}

function encodeBody(fn, b, v) {
  if (b.f === "json") {
    var s;
    try {
      s = JSON.stringify(v);
    } catch (err) {
      fail(fn, "body cannot be sent as JSON: " + err.message);
    }
    if (s === undefined) {
      fail(fn, "body cannot be sent as JSON");
    }
    return s;
  }
  if (b.f === "form") {
    if (typeof v === "string") {
      return v;
    }
    if (typeof v !== "object") {
      fail(fn, "body must be an object of form fields, or an encoded string");
    }
    var p = {k: "body"};
    var pairs = [];
    Object.keys(v).forEach(function (k) {
      var x = v[k];
      var deep = b.d !== undefined && b.d.indexOf(k) >= 0;
      if (x !== null && typeof x === "object" && (deep || !(Array.isArray(x) && x.every(function (y) { return y === null || typeof y !== "object"; })))) {
        nested(fn, p, pct(fn, p, k), x, pairs, 0); // address[line1]=..., items[0][price]=...
        return;
      }
      var items = Array.isArray(x) ? x : [x];
      items.forEach(function (y) {
        if (y !== undefined && y !== null) {
          pairs.push(pct(fn, p, k) + "=" + pct(fn, p, scalar(fn, p, y)));
        }
      });
    });
    return pairs.join("&");
  }
  if (typeof v !== "string") {
    fail(fn, "body must be a string for " + b.t);
  }
  return v;
}

// makeOp builds one generated function.
function makeOp(name, method, pieces, params, body) {
  var known = Object.create(null);
  params.forEach(function (p) { known[p.k] = true; });
  if (body) {
    known.body = true;
  }
  // Like the generic preamble's functions, a generated one never throws: an argument error
  // rejects the Promise it returns, and no call is made.
  var fn = function (args) {
    try {
      return send(args);
    } catch (e) {
      return Promise.reject(e);
    }
  };
  return fn;
  function send(args) {
    if (args === undefined || args === null) {
      args = {};
    } else if (typeof args !== "object" || Array.isArray(args)) {
      fail(name, "pass one object argument, e.g. api." + name + "({...})");
    }
    Object.keys(args).forEach(function (k) {
      if (!own.call(known, k)) {
        fail(name, "unknown parameter " + quote(k) + " (known: " + Object.keys(known).join(", ") + ")");
      }
    });
    var vals = params.map(function (p) {
      var v = own.call(args, p.k) ? args[p.k] : undefined;
      if ((v === undefined || v === null) && p.r) {
        fail(name, "missing required parameter " + quote(p.k));
      }
      return v;
    });
    var bv;
    if (body) {
      bv = own.call(args, "body") ? args.body : undefined;
      if ((bv === undefined || bv === null) && body.r) {
        fail(name, "missing required parameter \"body\"");
      }
    }
    var path = "";
    pieces.forEach(function (x) {
      path += typeof x === "number" ? pathValue(name, params[x], vals[x]) : x;
    });
    var q = [];
    var h = {};
    var nh = 0;
    params.forEach(function (p, i) {
      var v = vals[i];
      if (v === undefined || v === null || p.i === "path") {
        return;
      }
      if (p.i === "query") {
        addQuery(name, q, p, v);
      } else {
        h[p.n] = headerValue(name, p, v);
        nh++;
      }
    });
    var opts = {};
    if (body && bv !== undefined && bv !== null) {
      opts.body = encodeBody(name, body, bv);
      h["Content-Type"] = body.t;
      nh++;
    }
    if (q.length > 0) {
      opts.query = q.join("&");
    }
    if (nh > 0) {
      opts.headers = h;
    }
    return api.call(method, path, opts);
  }
}

var DEFAULT_STYLE = {path: "simple", query: "form", header: "simple"};
var IN = {p: "path", q: "query", h: "header"};

// decode turns one operation's line (see compact.go) into its function. The path's {slots}
// are the path parameters, which come first in the parameter list in order of first appearance.
function decode(name, l) {
  var f = l.split("\t");
  var params = JSON.parse(f[5]).map(function (a) {
    var i = IN[a[1]];
    var fl = a[2] || 0;
    var p = {k: a[0], i: i, s: a[4] || DEFAULT_STYLE[i]};
    if (i === "path") {
      p.r = true;
    } else {
      p.n = a[3] || a[0];
    }
    if (fl & 1) p.r = true;
    if (fl & 2) p.x = true;
    if (fl & 4) p.j = true;
    return p;
  });
  var pieces = [];
  var slots = Object.create(null);
  var n = 0;
  f[1].split(/(\{[^}]*\})/).forEach(function (x, i) {
    if (i % 2 === 1) {
      if (!(x in slots)) {
        slots[x] = n++;
      }
      pieces.push(slots[x]);
    } else if (x !== "") {
      pieces.push(x);
    }
  });
  var b = f[6] ? JSON.parse(f[6]) : null;
  var body = b ? {t: b[0], f: b[1], r: b[2] === 1, d: b[3] || []} : null;
  return makeOp(name, f[0], pieces, params, body);
}

// seek finds, by binary search, the line of a sorted "\n"-framed table whose key (the text
// before its first tab) is key, and returns the rest of the line after the tab, or null.
function seek(table, key) {
  var lo = 0, hi = table.length;
  while (lo < hi) {
    var mid = (lo + hi) >> 1;
    var nl = table.lastIndexOf("\n", mid);
    var start = nl + 1;
    var end = table.indexOf("\n", start);
    if (end < 0 || start >= table.length) {
      hi = nl;
      continue;
    }
    var tab = table.indexOf("\t", start);
    var k = tab < 0 || tab > end ? table.slice(start, end) : table.slice(start, tab);
    if (k === key) {
      return tab < 0 || tab > end ? "" : table.slice(tab + 1, end);
    }
    if (k < key) {
      lo = end + 1;
    } else {
      hi = nl;
    }
  }
  return null;
}

function isName(k) {
  return typeof k === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k);
}

// The generic preamble's own functions: reserved names, never an operation's.
var GENERIC = {call: true, get: true, post: true, put: true, patch: true, "delete": true, head: true, options: true};

// install makes the API's functions reachable on api without building any of them: api's
// prototype becomes a Proxy that, for a name in the table, decodes the function once and keeps
// it. api's own properties (call, get, ...) are found first, and every other name falls through
// to what api inherited before.
function install(t) {
  ["search", "describe"].concat(Object.getOwnPropertyNames(api)).forEach(function (k) {
    if (own.call(api, k) && (k === "search" || k === "describe" || !GENERIC[k] && isName(k) && seek(t.ops, k) !== null)) {
      throw new Error("plimsoll-specgen: api." + k + " is already defined; not replacing it");
    }
  });
  var made = Object.create(null);
  var base = Object.getPrototypeOf(api);
  function find(k) {
    if (!isName(k)) {
      return undefined;
    }
    if (own.call(made, k)) {
      return made[k];
    }
    var l = seek(t.ops, k);
    made[k] = l === null ? undefined : decode(k, l);
    return made[k];
  }
  Object.setPrototypeOf(api, new Proxy(base === null ? Object.create(null) : base, {
    get: function (target, k, receiver) {
      var f = find(k);
      return f !== undefined ? f : Reflect.get(target, k, receiver);
    },
    has: function (target, k) {
      return find(k) !== undefined || Reflect.has(target, k);
    }
  }));
  var search = searcher(t);
  Object.defineProperty(api, "search", {value: search.search, writable: true, enumerable: false, configurable: true});
  Object.defineProperty(api, "describe", {value: search.describe, writable: true, enumerable: false, configurable: true});
}

// ---- api.search and api.describe -------------------------------------------------------------

// Search words: the same rules as search.go searchWords, from the same tables, which the
// generated part defines (STOP_WORDS, CANON_WORDS) before this code.
var STOP = Object.create(null);
var CANON = Object.create(null);
STOP_WORDS.split(" ").forEach(function (w) { STOP[w] = true; });
CANON_WORDS.split(" ").forEach(function (kv) {
  var i = kv.indexOf("=");
  CANON[kv.slice(0, i)] = kv.slice(i + 1);
});

// stem reduces an English plural to its singular, as far as a short rule can.
function stem(w) {
  if (w.length > 4 && /ies$/.test(w)) return w.slice(0, -3) + "y";
  if (w.length > 4 && /(ches|shes|sses|xes|zes)$/.test(w)) return w.slice(0, -2);
  if (w.length > 3 && /s$/.test(w) && !/(ss|us|is)$/.test(w)) return w.slice(0, -1);
  return w;
}

// words splits text into canonical search words: camelCase and snake_case apart, ASCII letters
// and digits only, lower case, no stop words, plurals made singular, synonyms made one.
function words(text) {
  var s = String(text).replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
  var out = [];
  s.split(/[^A-Za-z0-9]+/).forEach(function (w) {
    if (w === "") {
      return;
    }
    w = w.toLowerCase();
    if (STOP[w] === true) {
      return;
    }
    if (CANON[w] !== undefined) {
      w = CANON[w];
    }
    w = stem(w);
    if (CANON[w] !== undefined) {
      w = CANON[w];
    }
    out.push(w);
  });
  return out;
}

// Field weights: a word in the function's name counts most, then the path, the group, the
// summary, the method's verb and the description.
var WEIGHTS = [3, 2.5, 1.5, 1, 1]; // name, summary, path, group, verb: search.go's field bits, in order

// Budgets that keep one search answer near 1,000 tokens (bytes/4).
var SEARCH_BYTES = 3600, SIG_BYTES = 420, TYPE_BYTES = 260;

// cutSig shortens fn({a:T,b:T,...}):R to about max bytes at a parameter boundary, marking the cut
// with an ellipsis; api.describe gives the whole.
function cutSig(sig, max) {
  if (sig.length <= max) {
    return sig;
  }
  var depth = 0, last = -1, close = -1;
  for (var i = 0; i < sig.length; i++) {
    var c = sig[i];
    if (c === '"') {
      for (i++; i < sig.length && sig[i] !== '"'; i++) {
        if (sig[i] === "\\") {
          i++;
        }
      }
    } else if (c === "(" || c === "{" || c === "[") {
      depth++;
    } else if (c === ")" || c === "}" || c === "]") {
      depth--;
      if (depth === 0 && close < 0) {
        close = i;
      }
    } else if (c === "," && depth === 2 && i < max) {
      last = i;
    }
  }
  var tail = close >= 0 ? sig.slice(close + 1) : "";
  if (tail.length > 120) {
    tail = tail.slice(0, 118) + "\u2026";
  }
  if (last < 0) {
    return sig.slice(0, max) + "\u2026";
  }
  return sig.slice(0, last) + ",\u2026})" + tail;
}

function searcher(t) {
  var N = t.offsets.length / 5;

  // entry reads operation k of the name-sorted table.
  function entry(k) {
    var at = parseInt(t.offsets.substr(k * 5, 5), 36);
    var f = t.ops.slice(at, t.ops.indexOf("\n", at)).split("\t");
    return {fn: f[0], http: f[1] + " " + f[2], group: f[3], summary: f[4], sig: f[0] + f[5], doc: f[8] || "", deprecated: f[9] === "1"};
  }

  // named finds an operation's position by name, or -1.
  function named(name) {
    var lo = 0, hi = N;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      var at = parseInt(t.offsets.substr(mid * 5, 5), 36);
      var fn = t.ops.slice(at, t.ops.indexOf("\t", at));
      if (fn === name) {
        return mid;
      }
      if (fn < name) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return -1;
  }

  // usedTypes collects the named types a text mentions, and (deep) those their shapes mention.
  function usedTypes(text, out, deep, budget) {
    var re = /[A-Za-z_][A-Za-z0-9_.$-]+/g;
    var m;
    var queue = [];
    while ((m = re.exec(text)) !== null) {
      queue.push(m[0]);
    }
    for (var i = 0; i < queue.length; i++) {
      var n = queue[i];
      if (own.call(out, n)) {
        continue;
      }
      var shape = seek(t.types, n);
      if (shape === null) {
        continue;
      }
      if (budget.left <= 0) {
        break;
      }
      if (shape.length > budget.each) {
        shape = shape.slice(0, budget.each) + "\u2026";
      }
      budget.left -= shape.length + n.length;
      out[n] = shape;
      if (deep) {
        var more = shape.match(re) || [];
        for (var j = 0; j < more.length; j++) {
          queue.push(more[j]);
        }
      }
    }
    return out;
  }

  function search(text, opts) {
    if (typeof text !== "string") {
      throw new TypeError("api.search: pass the words to look for as a string");
    }
    var limit = 5;
    if (opts !== undefined && opts !== null) {
      if (typeof opts !== "object" || Object.keys(opts).some(function (k) { return k !== "limit"; })) {
        throw new TypeError("api.search: options are {limit: n}");
      }
      if (opts.limit !== undefined) {
        limit = Math.max(1, Math.min(20, Math.floor(Number(opts.limit)) || 5));
      }
    }
    var q = [];
    words(text).forEach(function (w) {
      if (q.indexOf(w) < 0) {
        q.push(w);
      }
    });
    // Gather each operation's hits from the postings of the query's words.
    var hits = Object.create(null);
    var W = t.width + 1;
    q.forEach(function (w, qi) {
      var list = seek(t.postings, w);
      if (list === null || list === "") {
        return;
      }
      var n = list.length / W;
      var idf = Math.log(1 + N / n);
      for (var i = 0; i < list.length; i += W) {
        var k = parseInt(list.substr(i, t.width), 36);
        var mask = parseInt(list[i + t.width], 36);
        var h = hits[k] || (hits[k] = {score: 0, hit: 0, name: 0, sum: 0});
        var f = 0;
        while (f < WEIGHTS.length && !(mask & (1 << f))) {
          f++;
        }
        h.score += WEIGHTS[f] * idf;
        h.hit++;
        if (mask & 1) h.name++;
        if (mask & 2) h.sum++;
      }
    });
    var direct = named(text.trim());
    if (direct >= 0 && !hits[direct]) {
      hits[direct] = {score: 0, hit: 0, name: 0, sum: 0};
    }
    var scored = [];
    Object.keys(hits).forEach(function (ks) {
      var k = Number(ks);
      var h = hits[k];
      var score = h.score * (1 + h.hit) / (1 + q.length); // every word found beats some found
      // An operation whose name or summary the query covers beats one that only mentions it.
      var nw = parseInt(t.counts[2 * k], 36), sw = parseInt(t.counts[2 * k + 1], 36);
      var focus = Math.max(nw ? h.name / nw : 0, sw ? h.sum / sw : 0);
      score *= 0.4 + 0.6 * focus * focus;
      if (k === direct) {
        score += 1000;
      }
      scored.push({k: k, s: score});
    });
    scored.sort(function (a, b) { return b.s - a.s || a.k - b.k; });
    // Deprecated operations are known only once read; they give way to the rest.
    var top = scored.slice(0, limit + 5).map(function (x) {
      var e = entry(x.k);
      return {e: e, s: e.deprecated ? x.s * 0.7 : x.s, k: x.k};
    });
    top.sort(function (a, b) { return b.s - a.s || a.k - b.k; });
    var results = [];
    var typesOut = {};
    var left = SEARCH_BYTES;
    top.slice(0, limit).forEach(function (x) {
      var e = x.e;
      var r = {fn: e.fn, http: e.http, summary: e.summary, sig: cutSig(e.sig, Math.max(120, Math.min(SIG_BYTES, left - 200)))};
      if (e.deprecated) {
        r.deprecated = true;
      }
      left -= JSON.stringify(r).length;
      results.push(r);
    });
    // The named types the signatures mention, each cut short, while the budget lasts.
    var budget = {left: Math.max(left, 300), each: TYPE_BYTES};
    results.forEach(function (r) {
      usedTypes(r.sig, typesOut, false, budget);
    });
    return {results: results, types: typesOut};
  }

  function describe(name) {
    if (typeof name !== "string") {
      throw new TypeError("api.describe: pass a function name as a string");
    }
    var k = named(name);
    var e = k >= 0 ? entry(k) : null;
    if (!e) {
      var near = search(name, {limit: 3}).results.map(function (r) { return r.fn; });
      throw new Error("api.describe: no function " + JSON.stringify(name) + (near.length ? " (did you mean " + near.join(", ") + "?)" : ""));
    }
    var r = {fn: e.fn, http: e.http, summary: e.summary, sig: e.sig};
    if (e.doc) {
      r.doc = e.doc;
    }
    if (e.deprecated) {
      r.deprecated = true;
    }
    r.types = usedTypes(e.sig, {}, true, {left: 6000, each: 1200});
    return r;
  }

  return {search: search, describe: describe};
}
