// List the items, fetch each one, and report the total stock: a typical read-only agent tool.
// Try: plimsoll-run demo --tool guests/examples/inventory.js
const list = await api.get("/items", { query: { limit: input?.limit ?? 5 } });
if (!list.ok) {
  throw new Error(`listing items failed: ${list.status} ${list.body}`);
}
const items = await Promise.all(list.json().items.map((id) => api.get(`/items/${id}`)));
const stock = items.map((r) => r.json()).reduce((sum, item) => sum + item.stock, 0);
return { items: items.length, stock };
