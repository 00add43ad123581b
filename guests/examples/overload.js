// One call every 100 ms for 8 s, the way an agent's loop keeps calling an API that is struggling.
// The broker decides what each call costs the API: run it with `plimsoll-run demo`.
const start = Date.now();
const statuses = {};
for (let i = 0; i < 80; i++) {
  const res = await api.get("/items");
  const key = `${res.status} ${res.outcome}`;
  statuses[key] = (statuses[key] || 0) + 1;
  const next = start + (i + 1) * 100;
  const wait = next - Date.now();
  if (wait > 0) {
    await sleep(wait);
  }
}
return { calls: 80, statuses };
