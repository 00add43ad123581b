# plimsoll conformance driver for the generic Python client (preamble/python).
#
# The contract is in preamble/README.md. `input` is the scenario's operations; every call goes
# through the client's api object and every sleep through asyncio.sleep. The result is
# {"observations": [...]}, one per operation, which the engine prints as JSON.
import asyncio
import base64


def perform(op):
    """One call, with the client's shortcut for the method when there is one, else api.call."""
    opts = {k: op[k] for k in ("query", "headers") if k in op}
    body = None
    if "body" in op:
        body = op["body"]
    elif "body_base64" in op:
        body = base64.b64decode(op["body_base64"])
    elif "json" in op:
        body = op["json"]
    method, path = op["method"], op["path"]
    if method == "GET" and body is None:
        return api.get(path, **opts)
    if method == "DELETE" and body is None:
        return api.delete(path, **opts)
    if method == "POST":
        return api.post(path, body, **opts)
    if method == "PUT":
        return api.put(path, body, **opts)
    if method == "PATCH":
        return api.patch(path, body, **opts)
    return api.call(method, path, body=body, **opts)


def observe(res, read):
    headers = {name: res.header_values(name) for name in res.headers}
    o = {"op": "call", "status": res.status, "ok": res.ok, "outcome": res.outcome, "headers": headers}
    if read == "bytes":
        o["body_latin1"] = res.bytes().decode("latin-1")
    else:
        o["body"] = res.body
    return o


async def settle(op):
    """One call and its observed answer, or the error the client raised."""
    try:
        return observe(await perform(op), op.get("read"))
    except Exception as e:
        return {"op": "call", "error": str(e)}


observations = []
for op in input["operations"]:
    if op["op"] == "sleep":
        await asyncio.sleep(op["ms"] / 1000)
        observations.append({"op": "sleep"})
    elif op["op"] == "concurrent":
        # Every call is submitted before any is awaited; gather keeps the order listed.
        observations.append({"op": "concurrent", "observations": await asyncio.gather(*map(settle, op["calls"]))})
    else:
        observations.append(await settle(op))
return {"observations": observations}
