// plimsoll generic JavaScript preamble, guest ABI v2 (see preamble/ABI.md).
//
// The runtime evaluates this once per instance, before any per-API preamble and before the tool.
// It defines exactly three globals: api, sleep and console. Everything else stays private to the
// closure below, including the runtime's native bridge, which is removed from the global object.
(function (global) {
  "use strict";

  const native = global.__plimsoll;
  delete global.__plimsoll;
  if (typeof native !== "object" || native === null || typeof native.submit !== "function") {
    throw new Error("plimsoll: the preamble needs the plimsoll runtime's native bridge");
  }

  const hasOwn = Object.prototype.hasOwnProperty;
  const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

  // Percent-encodes s so that only RFC 3986 unreserved characters stay as they are.
  // encodeURIComponent also leaves ! ' ( ) * alone, so those are escaped here.
  const SUB_DELIMS = /[!'()*]/g;
  const HAS_SUB_DELIMS = /[!'()*]/;

  function escapeSubDelim(c) {
    return "%" + c.charCodeAt(0).toString(16).toUpperCase();
  }

  function encodeComponent(s) {
    const e = encodeURIComponent(s);
    return HAS_SUB_DELIMS.test(e) ? e.replace(SUB_DELIMS, escapeSubDelim) : e;
  }

  function queryScalar(key, v) {
    switch (typeof v) {
      case "string":
        return v;
      case "number":
      case "boolean":
      case "bigint":
        return String(v);
    }
    if (v instanceof Date) {
      return v.toISOString();
    }
    throw new TypeError(
      `api: query parameter "${key}" must be a string, number, boolean, Date or an array of them`
    );
  }

  function encodeQuery(query) {
    if (query === undefined || query === null) {
      return "";
    }
    if (typeof query === "string") {
      return query;
    }
    if (typeof query !== "object" || Array.isArray(query)) {
      throw new TypeError("api: query must be a string or an object");
    }
    let out = "";
    const keys = Object.keys(query);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const v = query[key];
      if (v === undefined || v === null) {
        continue;
      }
      const k = encodeComponent(key) + "=";
      if (Array.isArray(v)) {
        for (let j = 0; j < v.length; j++) {
          const item = v[j];
          if (item !== undefined && item !== null) {
            out += (out === "" ? "" : "&") + k + encodeComponent(queryScalar(key, item));
          }
        }
      } else {
        out += (out === "" ? "" : "&") + k + encodeComponent(queryScalar(key, v));
      }
    }
    return out;
  }

  function headerValue(name, v) {
    switch (typeof v) {
      case "string":
        return v;
      case "number":
      case "boolean":
      case "bigint":
        return String(v);
    }
    throw new TypeError(`api: header "${name}" must be a string, a number or an array of them`);
  }

  // Returns the envelope's headers object, or undefined when there are none.
  function buildHeaders(headers) {
    if (headers === undefined || headers === null) {
      return undefined;
    }
    if (typeof headers !== "object" || Array.isArray(headers)) {
      throw new TypeError("api: headers must be an object of name -> value");
    }
    let out;
    const names = Object.keys(headers);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const v = headers[name];
      if (v === undefined || v === null) {
        continue;
      }
      let value;
      if (Array.isArray(v)) {
        value = [];
        for (let j = 0; j < v.length; j++) {
          value.push(headerValue(name, v[j]));
        }
      } else {
        value = headerValue(name, v);
      }
      if (out === undefined) {
        out = {};
      }
      out[name] = value;
    }
    return out;
  }

  function hasContentType(headers) {
    if (headers === undefined) {
      return false;
    }
    const names = Object.keys(headers);
    for (let i = 0; i < names.length; i++) {
      if (names[i].length === 12 && names[i].toLowerCase() === "content-type") {
        return true;
      }
    }
    return false;
  }

  // Option names each method accepts.
  const CALL_OPTIONS = { query: true, headers: true, body: true };
  const OPTIONS = { query: true, headers: true };

  const NO_OPTIONS = Object.freeze({});

  function checkOptions(fn, opts, allowed) {
    if (opts === undefined || opts === null) {
      return NO_OPTIONS;
    }
    if (typeof opts !== "object" || Array.isArray(opts)) {
      throw new TypeError(`api.${fn}: options must be an object`);
    }
    for (const key in opts) {
      if (hasOwn.call(opts, key) && allowed[key] !== true) {
        throw new TypeError(
          `api.${fn}: unknown option "${key}" (allowed: ${Object.keys(allowed).join(", ")})`
        );
      }
    }
    return opts;
  }

  const METHOD_SET = {};
  for (let i = 0; i < METHODS.length; i++) {
    METHOD_SET[METHODS[i]] = true;
  }

  // Builds the ABI request envelope for one call. Key order is fixed: method, path, query,
  // headers, body or body_base64.
  function buildEnvelope(method, path, query, headersIn, body) {
    if (typeof method !== "string") {
      throw new TypeError("api.call: method must be a string");
    }
    const m = method.toUpperCase();
    if (METHOD_SET[m] !== true) {
      throw new TypeError(`api.call: unsupported method "${method}" (use one of ${METHODS.join(", ")})`);
    }
    if (typeof path !== "string") {
      throw new TypeError("api.call: path must be a string");
    }
    let q = encodeQuery(query);
    const mark = path.indexOf("?");
    if (mark >= 0) {
      const inPath = path.slice(mark + 1);
      path = path.slice(0, mark);
      q = inPath !== "" && q !== "" ? inPath + "&" + q : inPath || q;
    }
    const env = { method: m, path: path };
    if (q !== "") {
      env.query = q;
    }
    let headers = buildHeaders(headersIn);
    let text;
    let base64;
    if (body === undefined) {
      // no body
    } else if (typeof body === "string") {
      text = body;
    } else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
      base64 = native.b64encode(body);
    } else {
      text = JSON.stringify(body);
      if (text !== undefined && !hasContentType(headers)) {
        if (headers === undefined) {
          headers = {};
        }
        headers["Content-Type"] = "application/json";
      }
    }
    if (headers !== undefined) {
      env.headers = headers;
    }
    if (text !== undefined) {
      env.body = text;
    } else if (base64 !== undefined) {
      env.body_base64 = base64;
    }
    return env;
  }

  // A Response keeps its envelope under a symbol key, which JSON.stringify, Object.keys and
  // for-in skip. headers and outcome are worked out on first use: most tools never read them,
  // and every step costs in an interpreter running inside WebAssembly.
  const ENV = Symbol("plimsoll.envelope");
  const HEADERS = Symbol("plimsoll.headers");

  function Response(env) {
    const status = env.status;
    let body = env.body;
    if (typeof env.body_base64 === "string") {
      body = native.utf8decode(native.b64decode(env.body_base64));
    } else if (typeof body !== "string") {
      body = "";
    }
    this.status = status;
    this.ok = status >= 200 && status <= 299;
    this.body = body;
    this[ENV] = env;
  }
  // The runtime's shortcuts (see pristine). A bridge without them (a test's stand-in) gets every
  // call through submit.
  const shortcuts =
    typeof native.submitGet === "function" &&
    typeof native.submitEnvelope === "function" &&
    typeof native.setResponse === "function";
  if (shortcuts) {
    // The runtime answers calls with responses made as this constructor makes them.
    native.setResponse(Response, ENV);
  }

  // lowerHeaders turns the envelope's canonical name -> [values] into lower-case name ->
  // values joined with ", ".
  function lowerHeaders(rawHeaders) {
    const headers = {};
    if (rawHeaders === undefined || rawHeaders === null) {
      return headers;
    }
    const names = Object.keys(rawHeaders);
    for (let i = 0; i < names.length; i++) {
      const lower = names[i].toLowerCase();
      const vs = rawHeaders[names[i]];
      let joined = Array.isArray(vs) ? vs.join(", ") : "" + vs;
      if (hasOwn.call(headers, lower)) {
        joined = headers[lower] + ", " + joined;
      }
      if (lower === "__proto__") {
        Object.defineProperty(headers, lower, {
          value: joined,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        headers[lower] = joined;
      }
    }
    return headers;
  }

  // Assigning to a lazy field gives the response an own property that hides the getter.
  function shadow(name) {
    return function (value) {
      Object.defineProperty(this, name, { value: value, writable: true, enumerable: true, configurable: true });
    };
  }

  Object.defineProperty(Response.prototype, "headers", {
    get: function () {
      let h = this[HEADERS];
      if (h === undefined) {
        h = this[HEADERS] = lowerHeaders(this[ENV].headers);
      }
      return h;
    },
    set: shadow("headers"),
    configurable: true,
  });

  Object.defineProperty(Response.prototype, "outcome", {
    get: function () {
      return this.headers["plimsoll-outcome"] || "forwarded";
    },
    set: shadow("outcome"),
    configurable: true,
  });

  // toJSON makes JSON.stringify(res) give {status, ok, outcome, headers, body}.
  Response.prototype.toJSON = function toJSON() {
    return {
      status: this.status,
      ok: this.ok,
      outcome: this.outcome,
      headers: this.headers,
      body: this.body,
    };
  };

  // reason is the broker's reason when it answered the call itself (outcome other than
  // "forwarded"), else undefined.
  Object.defineProperty(Response.prototype, "reason", {
    get: function () {
      if (this.outcome === "forwarded") {
        return undefined;
      }
      try {
        const r = JSON.parse(this.body).reason;
        return typeof r === "string" ? r : undefined;
      } catch (e) {
        return undefined;
      }
    },
    set: shadow("reason"),
    configurable: true,
  });

  // json parses the API's body. A body the broker wrote instead (shed, denied, over budget,
  // invalid, failed) is not the API's answer: reading it as one would fail later and far away,
  // so json() throws here, naming the status, the outcome and the broker's reason.
  Response.prototype.json = function json() {
    const outcome = this.outcome;
    if (outcome !== "forwarded") {
      const reason = this.reason;
      throw new Error(
        "json(): the broker answered " + this.status + " " + outcome + (reason ? ": " + reason : "") +
          "; the API sent no body (check r.ok or r.outcome first)"
      );
    }
    try {
      return JSON.parse(this.body);
    } catch (e) {
      throw new SyntaxError("json(): the API's " + this.status + " answer is not JSON: " + e.message);
    }
  };

  Response.prototype.text = function text() {
    return this.body;
  };

  Response.prototype.bytes = function bytes() {
    const base64 = this[ENV].body_base64;
    const buf = typeof base64 === "string" ? native.b64decode(base64) : native.utf8encode(this.body);
    return new Uint8Array(buf);
  };

  Response.prototype.headerValues = function headerValues(name) {
    const lower = String(name).toLowerCase();
    const rawHeaders = this[ENV].headers;
    const out = [];
    if (rawHeaders !== undefined && rawHeaders !== null) {
      const names = Object.keys(rawHeaders);
      for (let i = 0; i < names.length; i++) {
        if (names[i].toLowerCase() === lower) {
          const vs = rawHeaders[names[i]];
          if (Array.isArray(vs)) {
            for (let j = 0; j < vs.length; j++) {
              out.push("" + vs[j]);
            }
          } else {
            out.push("" + vs);
          }
        }
      }
    }
    return out;
  };

  // The built-ins a call looks up when it is made. A tool may replace them (and a hostile one may
  // use JSON.stringify to send an envelope of its own choosing); while none is replaced, the
  // runtime does their work (submitGet, submitEnvelope), which is much cheaper than running
  // them in the interpreter and gives the same envelopes and responses.
  const STRING_PROTO = String.prototype;
  const builtins = {
    stringify: JSON.stringify,
    parse: JSON.parse,
    toUpperCase: STRING_PROTO.toUpperCase,
    indexOf: STRING_PROTO.indexOf,
  };

  function pristine() {
    return (
      shortcuts &&
      JSON.stringify === builtins.stringify &&
      JSON.parse === builtins.parse &&
      STRING_PROTO.toUpperCase === builtins.toUpperCase &&
      STRING_PROTO.indexOf === builtins.indexOf
    );
  }

  function parseResponse(text) {
    return new Response(JSON.parse(text));
  }

  // send submits the call and returns the promise of its Response: calls overlap at the host (up
  // to limits.max_inflight; more wait in the runtime, in order), and the runtime's loop settles
  // each promise when its call completes.
  function send(method, path, query, headers, body) {
    const env = buildEnvelope(method, path, query, headers, body);
    if (pristine()) {
      return native.submitEnvelope(JSON.stringify(env));
    }
    return native.submit(JSON.stringify(env)).then(parseResponse);
  }

  // The api methods return promises. Argument errors reject the promise rather than throw, as
  // they would from an async function; the call itself is submitted before the method returns,
  // and its promise resolves when it completes.
  const api = {
    call: function (method, path, opts) {
      try {
        const o = checkOptions("call", opts, CALL_OPTIONS);
        return send(method, path, o.query, o.headers, o.body);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    get: function (path, opts) {
      try {
        if (opts === undefined && typeof path === "string" && pristine()) {
          // The commonest call: the runtime sends the envelope buildEnvelope and JSON.stringify
          // would make, without running them, when the path needs no escaping and has no query.
          const res = native.submitGet(path);
          if (res !== undefined) {
            return res;
          }
        }
        const o = checkOptions("get", opts, OPTIONS);
        return send("GET", path, o.query, o.headers, undefined);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    post: function (path, body, opts) {
      try {
        const o = checkOptions("post", opts, OPTIONS);
        return send("POST", path, o.query, o.headers, body);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    put: function (path, body, opts) {
      try {
        const o = checkOptions("put", opts, OPTIONS);
        return send("PUT", path, o.query, o.headers, body);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    patch: function (path, body, opts) {
      try {
        const o = checkOptions("patch", opts, OPTIONS);
        return send("PATCH", path, o.query, o.headers, body);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    delete: function (path, opts) {
      try {
        const o = checkOptions("delete", opts, OPTIONS);
        return send("DELETE", path, o.query, o.headers, undefined);
      } catch (e) {
        return Promise.reject(e);
      }
    },
  };

  // sleep waits ms milliseconds. With calls in flight it returns a promise the runtime's loop
  // resolves when the time is up, and the calls complete meanwhile: `await sleep(100)`. With
  // nothing in flight it blocks the run and returns a resolved promise, so a bare `sleep(100)`
  // waits too. The host ends it at the run deadline.
  function sleep(ms) {
    const n = Number(ms);
    const p = native.sleep(n > 0 ? n : 0);
    return p === undefined ? Promise.resolve() : p;
  }

  // An engine may end each stack position with the bytecode offset, "tool.js:3:9(12)" (goja,
  // the tests' native baseline), or name an anonymous function's frame "<anonymous>
  // (tool.js:3:9)" (QuickJS); both become "tool.js:3:9".
  const PC = /(:\d+:\d+)\(\d+\)/g;
  const ANONYMOUS = /^( *at )<(?:anonymous|eval)> \((.*)\)$/gm;

  function cleanStack(stack) {
    return stack.replace(PC, "$1").replace(/^\t/gm, "    ").replace(ANONYMOUS, "$1$2").replace(/\n+$/, "");
  }

  // The error string, then the stack. Some engines (the baseline goja) start the stack with the error
  // string; others (QuickJS) give only the frames.
  function errorText(e) {
    const stack = e.stack;
    if (typeof stack !== "string") {
      return String(e);
    }
    if (stack === "" || /^\s*at /.test(stack)) {
      return cleanStack(String(e) + "\n" + stack);
    }
    return cleanStack(stack);
  }

  function formatArg(v) {
    switch (typeof v) {
      case "string":
        return v;
      case "undefined":
        return "undefined";
      case "function":
        return `[Function ${v.name || "(anonymous)"}]`;
      case "object":
        if (v === null) {
          return "null";
        }
        if (v instanceof Error) {
          return errorText(v);
        }
        try {
          const s = JSON.stringify(v);
          if (s !== undefined) {
            return s;
          }
        } catch (e) {
          return `[${Object.prototype.toString.call(v).slice(8, -1)}: not JSON: ${e && e.message}]`;
        }
        return String(v);
      default:
        return String(v);
    }
  }

  function logger() {
    return function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) {
        parts.push(formatArg(arguments[i]));
      }
      native.log(parts.join(" "));
    };
  }

  const console = {
    log: logger(),
    info: logger(),
    debug: logger(),
    warn: logger(),
    error: logger(),
  };

  for (const [name, value] of [["api", api], ["sleep", sleep], ["console", console]]) {
    if (hasOwn.call(global, name)) {
      throw new Error(`plimsoll: the global "${name}" is already defined`);
    }
    Object.defineProperty(global, name, {
      value: value,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
})(globalThis);
