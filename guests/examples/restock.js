// Write through the grant: create an item with POST, then read it back.
// Try: plimsoll-run demo --tool guests/examples/restock.js --input '{"name":"lamp","stock":3}'
const created = await api.post("/items", { name: input?.name ?? "widget", stock: input?.stock ?? 1 });
if (created.status !== 201) {
  throw new Error(`create failed: ${created.status} ${created.body}`);
}
const { id } = created.json();
const back = await api.get(`/items/${id}`);
return { created: id, readBack: back.json() };
