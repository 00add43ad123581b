// Reads one pet of the example pet store: plimsoll-run run --profile petstore --profiles
// examples/profiles --input '{"id":42}' examples/get-pet.js
const r = await api.get(`/pets/${input.id}`);
if (!r.ok) throw new Error(`pet ${input.id}: ${r.status} ${r.text()}`);
console.log("read pet", input.id);
return r.json();
