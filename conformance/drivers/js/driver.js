// plimsoll conformance driver for the generic JavaScript preamble (preamble/js).
//
// The contract is in preamble/README.md. `input` is the scenario's operations; every call goes
// through the preamble's api object and every sleep through its sleep function. The result is
// {observations: [...]}, one per operation, which the runtime prints as JSON.

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function fromBase64(s) {
  const clean = s.replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let j = 0;
  for (let i = 0; i < clean.length; i++) {
    const v = B64.indexOf(clean[i]);
    if (v < 0) {
      throw new Error("driver: body_base64 is not base64");
    }
    value = ((value << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (value >> bits) & 0xff;
    }
  }
  return out;
}

// toLatin1 maps each byte to the character with that code (U+0000–U+00FF), the contract's
// body_latin1. String.fromCharCode does the work natively; a byte-by-byte base64 encoder costs
// about a second per 50 KB in an interpreter running inside WebAssembly.
function toLatin1(bytes) {
  const parts = [];
  for (let i = 0; i < bytes.length; i += 8192) {
    parts.push(String.fromCharCode.apply(null, bytes.subarray(i, i + 8192)));
  }
  return parts.join("");
}

// perform makes one call with the preamble's shortcut for the method when there is one, and
// api.call otherwise (HEAD, OPTIONS, or a GET or DELETE with a body).
function perform(op) {
  const opts = {};
  if (op.query !== undefined) {
    opts.query = op.query;
  }
  if (op.headers !== undefined) {
    opts.headers = op.headers;
  }
  let body;
  if (op.body !== undefined) {
    body = op.body;
  } else if (op.body_base64 !== undefined) {
    body = fromBase64(op.body_base64);
  } else if (op.json !== undefined) {
    body = op.json;
  }
  switch (op.method) {
    case "GET":
      if (body === undefined) {
        return api.get(op.path, opts);
      }
      break;
    case "DELETE":
      if (body === undefined) {
        return api.delete(op.path, opts);
      }
      break;
    case "POST":
      return api.post(op.path, body, opts);
    case "PUT":
      return api.put(op.path, body, opts);
    case "PATCH":
      return api.patch(op.path, body, opts);
  }
  if (body !== undefined) {
    opts.body = body;
  }
  return api.call(op.method, op.path, opts);
}

function observe(res, read) {
  const headers = {};
  for (const name of Object.keys(res.headers)) {
    headers[name] = res.headerValues(name);
  }
  const o = { op: "call", status: res.status, ok: res.ok, outcome: res.outcome, headers: headers };
  if (read === "bytes") {
    o.body_latin1 = toLatin1(res.bytes());
  } else {
    o.body = res.body;
  }
  return o;
}

// settle makes one call and observes its answer, or the error the preamble raised.
async function settle(op) {
  try {
    return observe(await perform(op), op.read);
  } catch (e) {
    return { op: "call", error: String((e && e.message) || e) };
  }
}

const observations = [];
for (const op of input.operations) {
  if (op.op === "sleep") {
    await sleep(op.ms);
    observations.push({ op: "sleep" });
  } else if (op.op === "concurrent") {
    // Every call is started before any is awaited; Promise.all keeps the order listed.
    observations.push({ op: "concurrent", observations: await Promise.all(op.calls.map(settle)) });
  } else {
    observations.push(await settle(op));
  }
}
return { observations: observations };
