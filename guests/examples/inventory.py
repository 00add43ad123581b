# List the items, fetch each one, and report the total stock: a typical read-only agent tool.
# Try: plimsoll-run demo --tool guests/examples/inventory.py
import asyncio

listing = await api.get("/items", query={"limit": (input or {}).get("limit", 5)})
if not listing.ok:
    raise RuntimeError(f"listing items failed: {listing.status} {listing.body}")
items = await asyncio.gather(*(api.get(f"/items/{id}") for id in listing.json()["items"]))
stock = sum(r.json()["stock"] for r in items)
return {"items": len(items), "stock": stock}
