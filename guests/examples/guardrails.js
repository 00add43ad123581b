// What the broker refuses, and what the tool sees when it does. Nothing here reaches the API.
// Try: plimsoll-run demo --tool guests/examples/guardrails.js
const tries = [
  ["DELETE /items/1", () => api.delete("/items/1")],                 // not in the grant: 403
  ["GET /admin", () => api.get("/admin")],                           // not in the grant: 403
  ["GET /items/../admin", () => api.get("/items/../admin")],         // not canonical: 400
  ["GET /items with a guest Authorization", () =>
    api.get("/items", { headers: { Authorization: "Bearer stolen" } })], // broker-owned header: 400
];
const seen = {};
for (const [what, call] of tries) {
  const res = await call();
  seen[what] = `${res.status} ${res.outcome}: ${res.reason}`;
}
return seen;
