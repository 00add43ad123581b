// plimsoll's additions to QuickJS, evaluated by the reactor before the generic preamble. It is a
// function expression: the reactor calls it with the global object and the native bridge, and
// keeps what it returns (the reporting helpers) out of the tools' reach. It adds the web globals
// tools reach for: URL, URLSearchParams, TextEncoder, TextDecoder, structuredClone.
(function (global, native) {
  "use strict";

  const TOOL_PREFIX_LENGTH = "(async function(input) {".length;
  const MAX_FRAMES = 10;

  function define(name, value) {
    Object.defineProperty(global, name, { value, writable: true, enumerable: false, configurable: true });
  }

  function methods(proto, fns) {
    for (const name of Object.keys(fns)) {
      Object.defineProperty(proto, name, { value: fns[name], writable: true, enumerable: false, configurable: true });
    }
  }

  function bytesOf(v) {
    if (v === undefined) return new Uint8Array(0);
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    throw new TypeError("The data is not an ArrayBuffer or an ArrayBufferView");
  }

  // ---- TextEncoder / TextDecoder (UTF-8 only) ----

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(s = "") {
      return new Uint8Array(native.utf8encode(String(s)));
    }
    encodeInto(s, dest) {
      s = String(s);
      let read = 0;
      let written = 0;
      for (const ch of s) {
        const b = new Uint8Array(native.utf8encode(ch));
        if (written + b.length > dest.length) break;
        dest.set(b, written);
        written += b.length;
        read += ch.length;
      }
      return { read, written };
    }
  }

  const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8"];

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    constructor(label = "utf-8", options = {}) {
      if (!UTF8_LABELS.includes(String(label).trim().toLowerCase())) {
        throw new RangeError(`TextDecoder: the encoding "${label}" is not supported (only utf-8)`);
      }
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input, options) {
      const bytes = bytesOf(input);
      let s = native.utf8decode(bytes);
      if (this.#fatal && s.includes("\ufffd")) {
        const again = new Uint8Array(native.utf8encode(s));
        let same = again.length === bytes.length;
        for (let i = 0; same && i < bytes.length; i++) same = again[i] === bytes[i];
        if (!same) throw new TypeError("TextDecoder: the data is not valid utf-8");
      }
      if (!this.#ignoreBOM && s.charCodeAt(0) === 0xfeff) s = s.slice(1);
      return s;
    }
  }

  // ---- URLSearchParams ----

  function formEncode(s) {
    return encodeURIComponent(s)
      .replace(/%20/g, "+")
      .replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  }

  function formDecode(s) {
    s = s.replace(/\+/g, " ");
    try {
      return decodeURIComponent(s);
    } catch {
      return s.replace(/%([0-9A-Fa-f]{2})/g, (m, h) => String.fromCharCode(parseInt(h, 16)));
    }
  }

  function toUSVString(v) {
    return String(v).toWellFormed();
  }

  const LIST = Symbol("list");
  const OWNER = Symbol("owner");

  class URLSearchParams {
    constructor(init = "") {
      this[LIST] = [];
      this[OWNER] = null;
      if (init instanceof URLSearchParams) {
        this[LIST] = init[LIST].map((p) => [p[0], p[1]]);
      } else if (typeof init === "object" && init !== null) {
        if (typeof init[Symbol.iterator] === "function") {
          for (const pair of init) {
            const p = Array.from(pair);
            if (p.length !== 2) throw new TypeError("URLSearchParams: each pair must have two items");
            this[LIST].push([toUSVString(p[0]), toUSVString(p[1])]);
          }
        } else {
          for (const k of Object.keys(init)) this[LIST].push([toUSVString(k), toUSVString(init[k])]);
        }
      } else {
        this._parse(String(init));
      }
    }
    _parse(s) {
      if (s.startsWith("?")) s = s.slice(1);
      this[LIST] = [];
      for (const part of s.split("&")) {
        if (part === "") continue;
        const eq = part.indexOf("=");
        const k = eq < 0 ? part : part.slice(0, eq);
        const v = eq < 0 ? "" : part.slice(eq + 1);
        this[LIST].push([formDecode(k), formDecode(v)]);
      }
    }
    _update() {
      if (this[OWNER]) this[OWNER]._setQuery(this.toString());
    }
    get size() {
      return this[LIST].length;
    }
    append(k, v) {
      this[LIST].push([toUSVString(k), toUSVString(v)]);
      this._update();
    }
    delete(k, v) {
      k = toUSVString(k);
      this[LIST] = this[LIST].filter((p) => !(p[0] === k && (v === undefined || p[1] === toUSVString(v))));
      this._update();
    }
    get(k) {
      k = toUSVString(k);
      const p = this[LIST].find((q) => q[0] === k);
      return p ? p[1] : null;
    }
    getAll(k) {
      k = toUSVString(k);
      return this[LIST].filter((p) => p[0] === k).map((p) => p[1]);
    }
    has(k, v) {
      k = toUSVString(k);
      return this[LIST].some((p) => p[0] === k && (v === undefined || p[1] === toUSVString(v)));
    }
    set(k, v) {
      k = toUSVString(k);
      v = toUSVString(v);
      const i = this[LIST].findIndex((p) => p[0] === k);
      if (i < 0) {
        this[LIST].push([k, v]);
      } else {
        this[LIST][i][1] = v;
        this[LIST] = this[LIST].filter((p, j) => j <= i || p[0] !== k);
      }
      this._update();
    }
    sort() {
      const keyed = this[LIST].map((p, i) => [p, i]);
      keyed.sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]));
      this[LIST] = keyed.map((x) => x[0]);
      this._update();
    }
    forEach(fn, thisArg) {
      for (const [k, v] of this[LIST]) fn.call(thisArg, v, k, this);
    }
    *keys() {
      for (const p of this[LIST]) yield p[0];
    }
    *values() {
      for (const p of this[LIST]) yield p[1];
    }
    *entries() {
      for (const p of this[LIST]) yield [p[0], p[1]];
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return this[LIST].map((p) => formEncode(p[0]) + "=" + formEncode(p[1])).join("&");
    }
    get [Symbol.toStringTag]() {
      return "URLSearchParams";
    }
  }
  for (const name of ["_parse", "_update"]) {
    Object.defineProperty(URLSearchParams.prototype, name, { enumerable: false });
  }

  // ---- URL (the WHATWG parser's common cases: special schemes, opaque paths, relative refs) ----

  const SPECIAL = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21", "file:": "" };

  // Percent-encodes the characters of s that are not in keep (a regexp of characters to keep),
  // and every non-ASCII character as UTF-8.
  function pctEncode(s, extra) {
    let out = "";
    for (const ch of s.toWellFormed()) {
      const c = ch.codePointAt(0);
      if (c <= 0x20 || c >= 0x7f || extra.includes(ch)) {
        const b = new Uint8Array(native.utf8encode(ch));
        for (const x of b) out += "%" + (x < 16 ? "0" : "") + x.toString(16).toUpperCase();
      } else {
        out += ch;
      }
    }
    return out;
  }
  const PATH_SET = '"#<>?`{}';
  const QUERY_SET = "\"#<>";
  const SPECIAL_QUERY_SET = "\"#<>'";
  const FRAGMENT_SET = '"<>`';
  const USERINFO_SET = '"#<>?`{}/:;=@[\\]^|';

  function normalizePath(segments) {
    const out = [];
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i];
      const low = seg.toLowerCase();
      const last = i === segments.length - 1;
      if (seg === ".." || low === ".%2e" || low === "%2e." || low === "%2e%2e") {
        if (out.length) out.pop();
        if (last) out.push("");
      } else if (seg === "." || low === "%2e") {
        if (last) out.push("");
      } else {
        out.push(seg);
      }
    }
    return out;
  }

  function parseHost(h, special) {
    if (h.startsWith("[")) {
      if (!h.endsWith("]")) throw new TypeError("Invalid URL");
      return h.toLowerCase();
    }
    if (!special) return pctEncode(h, "");
    let host;
    try {
      host = decodeURIComponent(h).toLowerCase();
    } catch {
      throw new TypeError("Invalid URL");
    }
    if (host === "" || /[\x00-\x20#%/:<>?@[\\\]^|]/.test(host)) throw new TypeError("Invalid URL");
    if (/[^\x00-\x7f]/.test(host)) throw new TypeError("Invalid URL: internationalised host names are not supported");
    const parts = host.split(".");
    if (parts.length <= 4 && parts.every((p) => /^(0x[0-9a-f]*|\d+)$/.test(p) || p === "") && /^(0x[0-9a-f]*|\d+)$/.test(parts[parts.length - 1] || parts[parts.length - 2] || "x")) {
      const nums = parts.filter((p, i) => p !== "" || i !== parts.length - 1).map((p) => (p.startsWith("0x") ? parseInt(p.slice(2) || "0", 16) : /^0\d/.test(p) ? parseInt(p, 8) : Number(p)));
      if (nums.some((n) => Number.isNaN(n))) throw new TypeError("Invalid URL");
      let v = 0;
      for (let i = 0; i < nums.length - 1; i++) {
        if (nums[i] > 255) throw new TypeError("Invalid URL");
        v = v * 256 + nums[i];
      }
      const rest = 4 - (nums.length - 1);
      if (nums[nums.length - 1] >= 256 ** rest) throw new TypeError("Invalid URL");
      v = v * 256 ** rest + nums[nums.length - 1];
      return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
    }
    return host;
  }

  const STATE = Symbol("url");

  function parseURL(input, base) {
    let s = String(input).replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, "").replace(/[\t\n\r]/g, "");
    const u = { protocol: "", username: "", password: "", hostname: "", port: "", path: [], opaque: null, query: null, fragment: null, hasHost: false };
    let m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(s);
    let rest;
    if (m) {
      u.protocol = m[1].toLowerCase() + ":";
      rest = s.slice(m[0].length);
    } else {
      if (!base) throw new TypeError(`Invalid URL: ${input}`);
      u.protocol = base.protocol;
      rest = s;
      if (base.opaque !== null && !rest.startsWith("#")) throw new TypeError(`Invalid URL: ${input}`);
    }
    const special = Object.prototype.hasOwnProperty.call(SPECIAL, u.protocol);
    if (special) rest = rest.replace(/\\/g, "/");
    const hashAt = rest.indexOf("#");
    if (hashAt >= 0) {
      u.fragment = pctEncode(rest.slice(hashAt + 1), FRAGMENT_SET);
      rest = rest.slice(0, hashAt);
    }
    const queryAt = rest.indexOf("?");
    if (queryAt >= 0) {
      u.query = pctEncode(rest.slice(queryAt + 1), special ? SPECIAL_QUERY_SET : QUERY_SET);
      rest = rest.slice(0, queryAt);
    }
    const relative = !m || (special && base && base.protocol === u.protocol && !rest.startsWith("/"));
    if (!relative || rest.startsWith("//") || (special && m && rest.startsWith("/") === false && !base)) {
      if (rest.startsWith("//") || (special && m)) {
        rest = rest.replace(/^\/*/, special ? "" : "").replace(/^\/\//, "");
        if (!special) rest = rest.slice(0);
        let end = rest.indexOf("/");
        if (end < 0) end = rest.length;
        let auth = rest.slice(0, end);
        rest = rest.slice(end);
        const at = auth.lastIndexOf("@");
        if (at >= 0) {
          const info = auth.slice(0, at);
          auth = auth.slice(at + 1);
          const colon = info.indexOf(":");
          u.username = pctEncode(colon < 0 ? info : info.slice(0, colon), USERINFO_SET);
          u.password = colon < 0 ? "" : pctEncode(info.slice(colon + 1), USERINFO_SET);
        }
        const pm = /:(\d*)$/.exec(auth);
        if (pm && !auth.endsWith("]")) {
          auth = auth.slice(0, pm.index);
          if (pm[1] !== "") {
            const port = Number(pm[1]);
            if (port > 65535) throw new TypeError(`Invalid URL: ${input}`);
            u.port = String(port) === SPECIAL[u.protocol] ? "" : String(port);
          }
        } else if (/:/.test(auth) && !auth.startsWith("[")) {
          throw new TypeError(`Invalid URL: ${input}`);
        }
        if (auth === "" && special && u.protocol !== "file:") throw new TypeError(`Invalid URL: ${input}`);
        u.hostname = parseHost(auth, special);
        u.hasHost = true;
        u.path = normalizePath(rest === "" ? (special ? [""] : []) : rest.slice(1).split("/")).map((p) => pctEncode(p, PATH_SET));
        if (special && u.path.length === 0) u.path = [""];
        return u;
      }
      if (!special && !rest.startsWith("/")) {
        u.opaque = pctEncode(rest, "");
        return u;
      }
      u.path = normalizePath(rest.slice(1).split("/")).map((p) => pctEncode(p, PATH_SET));
      return u;
    }
    // relative to base
    u.username = base.username;
    u.password = base.password;
    u.hostname = base.hostname;
    u.port = base.port;
    u.hasHost = base.hasHost;
    if (rest === "") {
      u.path = base.path.slice();
      u.opaque = base.opaque;
      if (u.query === null) u.query = base.query;
    } else if (rest.startsWith("/")) {
      u.path = normalizePath(rest.slice(1).split("/")).map((p) => pctEncode(p, PATH_SET));
    } else {
      const dir = base.path.slice(0, -1);
      u.path = normalizePath(dir.concat(rest.split("/"))).map((p) => pctEncode(p, PATH_SET));
    }
    return u;
  }

  class URL {
    constructor(url, base) {
      let b;
      if (base !== undefined) b = base instanceof URL ? base[STATE] : parseURL(base);
      this[STATE] = parseURL(url, b);
      const sp = new URLSearchParams(this[STATE].query || "");
      sp[OWNER] = this;
      Object.defineProperty(this, "_sp", { value: sp });
    }
    static canParse(url, base) {
      try {
        new URL(url, base);
        return true;
      } catch {
        return false;
      }
    }
    static parse(url, base) {
      try {
        return new URL(url, base);
      } catch {
        return null;
      }
    }
    _setQuery(q) {
      this[STATE].query = q === "" ? null : q;
    }
    get protocol() {
      return this[STATE].protocol;
    }
    get username() {
      return this[STATE].username;
    }
    get password() {
      return this[STATE].password;
    }
    get hostname() {
      return this[STATE].hostname;
    }
    get port() {
      return this[STATE].port;
    }
    get host() {
      const u = this[STATE];
      return u.hostname + (u.port ? ":" + u.port : "");
    }
    get origin() {
      const u = this[STATE];
      if (u.protocol === "file:" || !Object.prototype.hasOwnProperty.call(SPECIAL, u.protocol)) return "null";
      return u.protocol + "//" + this.host;
    }
    get pathname() {
      const u = this[STATE];
      if (u.opaque !== null) return u.opaque;
      return u.path.length || u.hasHost ? "/" + u.path.join("/") : "";
    }
    set pathname(v) {
      const u = this[STATE];
      if (u.opaque !== null) return;
      let s = String(v);
      if (s.startsWith("/")) s = s.slice(1);
      u.path = normalizePath(s.split("/")).map((p) => pctEncode(p, PATH_SET));
    }
    get search() {
      const q = this[STATE].query;
      return q ? "?" + q : "";
    }
    set search(v) {
      let s = String(v);
      if (s.startsWith("?")) s = s.slice(1);
      this[STATE].query = s === "" ? null : pctEncode(s, SPECIAL_QUERY_SET);
      this._sp._parse(s);
    }
    get searchParams() {
      return this._sp;
    }
    get hash() {
      const f = this[STATE].fragment;
      return f ? "#" + f : "";
    }
    set hash(v) {
      let s = String(v);
      if (s.startsWith("#")) s = s.slice(1);
      this[STATE].fragment = s === "" ? null : pctEncode(s, FRAGMENT_SET);
    }
    get href() {
      const u = this[STATE];
      let out = u.protocol;
      if (u.hasHost) {
        out += "//";
        if (u.username || u.password) out += u.username + (u.password ? ":" + u.password : "") + "@";
        out += this.host;
      }
      out += this.pathname;
      if (u.query !== null) out += "?" + u.query;
      if (u.fragment !== null) out += "#" + u.fragment;
      return out;
    }
    set href(v) {
      this[STATE] = parseURL(v);
      this._sp._parse(this[STATE].query || "");
    }
    toString() {
      return this.href;
    }
    toJSON() {
      return this.href;
    }
    get [Symbol.toStringTag]() {
      return "URL";
    }
  }
  Object.defineProperty(URL.prototype, "_setQuery", { enumerable: false });

  // ---- structuredClone ----

  function cloneError(msg) {
    return typeof DOMException === "function" ? new DOMException(msg, "DataCloneError") : new TypeError(msg);
  }

  function structuredClone(value, options) {
    const seen = new Map();
    function clone(v) {
      if (typeof v === "function") throw cloneError(`${v.name || "function"} could not be cloned`);
      if (typeof v === "symbol") throw cloneError("a Symbol could not be cloned");
      if (typeof v !== "object" || v === null) return v;
      if (seen.has(v)) return seen.get(v);
      let out;
      const tag = Object.prototype.toString.call(v);
      if (Array.isArray(v)) {
        out = new Array(v.length);
        seen.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k]);
        return out;
      }
      if (v instanceof Date) out = new Date(v.getTime());
      else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
      else if (v instanceof ArrayBuffer) out = v.slice(0);
      else if (ArrayBuffer.isView(v)) {
        const buf = clone(v.buffer);
        out = v instanceof DataView ? new DataView(buf, v.byteOffset, v.byteLength) : new v.constructor(buf, v.byteOffset, v.length);
      } else if (v instanceof Map) {
        out = new Map();
        seen.set(v, out);
        for (const [k, x] of v) out.set(clone(k), clone(x));
        return out;
      } else if (v instanceof Set) {
        out = new Set();
        seen.set(v, out);
        for (const x of v) out.add(clone(x));
        return out;
      } else if (v instanceof Error) {
        const ctors = { EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
        const C = ctors[v.name] || Error;
        out = new C(v.message);
        if (typeof v.stack === "string") Object.defineProperty(out, "stack", { value: v.stack, writable: true, configurable: true });
        if ("cause" in v) out.cause = clone(v.cause);
      } else if (tag === "[object Boolean]") out = new Boolean(v.valueOf());
      else if (tag === "[object Number]") out = new Number(v.valueOf());
      else if (tag === "[object String]") out = new String(v.valueOf());
      else if (tag === "[object BigInt]") out = Object(v.valueOf());
      else if (v instanceof WeakMap || v instanceof WeakSet || v instanceof Promise || v instanceof WeakRef) {
        throw cloneError(`${tag.slice(8, -1)} object could not be cloned`);
      } else {
        out = {};
        seen.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k]);
        return out;
      }
      seen.set(v, out);
      return out;
    }
    return clone(value);
  }

  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);
  define("URLSearchParams", URLSearchParams);
  define("URL", URL);
  if (typeof global.structuredClone !== "function") define("structuredClone", structuredClone);
  // Only the web globals above, the ECMAScript ones and what the preamble adds: QuickJS's
  // performance object is not part of the tools' world.
  delete global.performance;

  // ---- reporting helpers, kept by the reactor ----

  // QuickJS writes an anonymous function's frame as "<anonymous> (file:line:col)"; the report
  // shows just the position. Columns on the tool's first line are made relative to the tool's
  // source, which shares that line with the prefix.
  function cleanFrame(frame, toolName) {
    let f = frame.replace(/^<(?:anonymous|eval)> \((.*)\)$/, "$1");
    const marker = toolName + ":1:";
    let at = f.startsWith(marker) ? 0 : f.indexOf("(" + marker);
    if (at < 0) return f;
    if (at > 0) at += 1;
    const start = at + marker.length;
    const m = /^\d+/.exec(f.slice(start));
    if (!m) return f;
    const col = Number(m[0]);
    if (col <= TOOL_PREFIX_LENGTH) return f;
    return f.slice(0, start) + (col - TOOL_PREFIX_LENGTH) + f.slice(start + m[0].length);
  }

  // head is the error string of a thrown value: String(err) for an Error (one with a stack), its
  // JSON for another object, its string form for a primitive.
  function head(v) {
    try {
      if (typeof v !== "object" || v === null) return String(v);
      if (typeof v.stack === "string") return String(v);
      const s = JSON.stringify(v);
      return s !== undefined ? s : String(v);
    } catch (e) {
      let why;
      try {
        why = String(e);
      } catch {
        why = "?";
      }
      return `(a thrown value that cannot be described: ${why})`;
    }
  }

  function frames(v, toolName) {
    let stack = "";
    try {
      if (typeof v === "object" && v !== null && typeof v.stack === "string") stack = v.stack;
    } catch {
      stack = "";
    }
    const out = [];
    for (const line of stack.split("\n")) {
      const l = line.trimStart();
      if (l.startsWith("at ")) out.push(cleanFrame(l.slice(3), toolName));
    }
    return out;
  }

  function uncaught(v, toolName) {
    let text = "Uncaught " + head(v);
    const fs = frames(v, toolName);
    for (let i = 0; i < fs.length; i++) {
      if (i === MAX_FRAMES) {
        text += `\n    ... ${fs.length - i} more frames`;
        break;
      }
      text += "\n    at " + fs[i];
    }
    return text;
  }

  // compileError: "SyntaxError: <message> (at tool.js:1:9)".
  function compileError(v, toolName) {
    const fs = frames(v, toolName);
    return head(v) + (fs.length ? ` (at ${fs[0]})` : "");
  }

  return Object.freeze({ head, uncaught, compileError });
});
