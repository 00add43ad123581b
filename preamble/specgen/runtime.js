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
      keys.forEach(function (k) { q.push(n + "[" + pct(fn, p, k) + "]=" + pct(fn, p, scalar(fn, p, v[k]))); });
    } else if (p.x) {
      keys.forEach(function (k) { q.push(pct(fn, p, k) + "=" + pct(fn, p, scalar(fn, p, v[k]))); });
    } else if (keys.length > 0) {
      q.push(n + "=" + keys.map(function (k) { return pct(fn, p, k) + "," + pct(fn, p, scalar(fn, p, v[k])); }).join(","));
    }
    return;
  }
  q.push(n + "=" + pct(fn, p, scalar(fn, p, v)));
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
      var items = Array.isArray(v[k]) ? v[k] : [v[k]];
      items.forEach(function (x) {
        if (x !== undefined && x !== null) {
          pairs.push(pct(fn, p, k) + "=" + pct(fn, p, scalar(fn, p, x)));
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

// op installs one generated function on api.
function op(name, method, pieces, params, body) {
  if (own.call(api, name)) {
    throw new Error("plimsoll-specgen: api." + name + " is already defined; not replacing it");
  }
  var known = Object.create(null);
  params.forEach(function (p) { known[p.k] = true; });
  if (body) {
    known.body = true;
  }
  // Like the generic preamble's functions, a generated one never throws: an argument error
  // rejects the Promise it returns, and no call is made.
  api[name] = function (args) {
    try {
      return send(args);
    } catch (e) {
      return Promise.reject(e);
    }
  };
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
