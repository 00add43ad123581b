// The operator page: polls the admin API every 500 ms and redraws. Plain DOM, no framework;
// text goes in with textContent only. The admin token, when there is one, lives in this tab's
// sessionStorage and travels in the Authorization header, never in a cookie or a URL, so another
// site cannot make the browser use it; the daemon also refuses cross-origin mutations.
"use strict";

const POLL_MS = 500;
const $ = (sel) => document.querySelector(sel);
let selected = null;   // the run whose chart is shown
let chartURL = null;   // its current blob: URL
let painted = false;

function token() { return sessionStorage.getItem("plimsoll-admin-token") || ""; }

async function api(method, path, body) {
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) {
    let why = resp.status + " " + resp.statusText;
    try { const j = await resp.json(); if (j.error) why += ": " + j.error; } catch (_) {}
    throw new Error(why);
  }
  return resp;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function status(text, isError) {
  const s = $("#status");
  s.textContent = text;
  s.classList.toggle("error", !!isError);
}

function seconds(ms) { return (ms / 1000).toFixed(1) + " s"; }

function runRow(r) {
  const tr = el("tr", { class: "run breaker-" + r.breaker + (r.run_id === selected ? " selected" : ""), "data-run": r.run_id, tabindex: "0" },
    el("td", {}, r.run_id), el("td", {}, r.client), el("td", {}, r.tool), el("td", { class: "n" }, seconds(r.elapsed_ms)),
    el("td", { class: "n forwarded" }, r.host_calls_forwarded), el("td", { class: "n shed" }, r.host_calls_shed),
    el("td", { class: "n" }, r.host_calls_denied + r.host_calls_invalid + r.host_calls_over_budget + r.host_calls_failed),
    el("td", { class: "n" }, r.probes + " (" + r.probes_ok + " ok)"), el("td", { class: "n" }, r.calls_in_flight),
    el("td", { class: "breaker" }, r.breaker.replace("_", " ")));
  const open = () => { selected = r.run_id; refreshChart(); };
  tr.addEventListener("click", open);
  tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(); });
  return tr;
}

// forceForm is made once per profile and kept, so a reason being typed survives the redraws.
const forms = new Map();
function forceForm(name) {
  if (forms.has(name)) return forms.get(name);
  const reason = el("input", { name: "reason", type: "text", maxlength: "200", "aria-label": "reason to force " + name + " open", placeholder: "reason (shown on every shed call)" });
  const force = el("button", { type: "submit", class: "force-open" }, "Force open");
  const clear = el("button", { type: "button", class: "clear" }, "Clear");
  const form = el("form", { class: "force", "data-profile": name }, reason, force, clear);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api("POST", "/admin/profiles/" + encodeURIComponent(name) + "/force-open", { reason: reason.value });
      reason.value = "";
      poll();
    } catch (e) { status("force-open " + name + ": " + e.message, true); }
  });
  clear.addEventListener("click", async () => {
    try { await api("DELETE", "/admin/profiles/" + encodeURIComponent(name) + "/force-open"); poll(); }
    catch (e) { status("clear " + name + ": " + e.message, true); }
  });
  forms.set(name, form);
  return form;
}

function profileSection(p) {
  const badges = [el("span", { class: "badge" }, p.served ? "served v" + p.version : "not served")];
  if (p.error) badges.push(el("span", { class: "badge error", title: p.error }, "refused: " + (p.field || "file")));
  if (p.forced_open) badges.push(el("span", { class: "badge forced" }, "forced open: " + p.forced_open.reason));
  const done = Object.entries(p.runs).map(([k, v]) => k + " " + v).join(" · ") || "none yet";
  const sec = el("section", { class: "profile" + (p.forced_open ? " forced" : ""), "data-profile": p.name },
    el("h2", {}, p.name, ...badges),
    el("p", { class: "hint" }, p.live_runs + " live · " + p.breaker_windows_open + " breaker windows open (" + p.breaker_windows_429 + " after 429) · finished: " + done));
  const form = forceForm(p.name);
  form.querySelector(".clear").hidden = !p.forced_open;
  sec.append(form);
  if (p.live.length === 0) {
    sec.append(el("p", { class: "empty" }, "no live runs"));
    return sec;
  }
  const head = el("tr", {}, ...["run", "client", "tool", "elapsed", "forwarded", "shed", "refused/failed", "probes", "in flight", "breaker"].map((h) => el("th", {}, h)));
  sec.append(el("table", { class: "runs" }, el("thead", {}, head), el("tbody", {}, ...p.live.map(runRow))));
  return sec;
}

function renderOpenings(list) {
  const body = $("#openings tbody");
  body.replaceChildren(...list.map((o) => el("tr", { class: o.status === 429 ? "w429" : "w503" },
    el("td", {}, new Date(o.at).toLocaleTimeString()), el("td", {}, o.profile), el("td", {}, o.run_id + (o.live ? " (live)" : "")),
    el("td", {}, o.client), el("td", {}, o.status), el("td", {}, o.retry_after || "none"),
    el("td", {}, seconds(o.cooldown_ms) + (o.clamped ? " (clamped)" : "")))));
  if (list.length === 0) body.append(el("tr", {}, el("td", { class: "empty", colspan: "7" }, "none")));
}

// renderFleet shows the replicas sharing this daemon's operator flags (--fleet), or hides the
// section when the daemon is alone.
function renderFleet(f, at) {
  const sec = $("#fleet");
  sec.hidden = !f;
  if (!f) return;
  $("#fleet-name").textContent = f.name + " · this replica: " + f.replica;
  const notes = [];
  if (f.degraded) notes.push("degraded: " + f.degraded + " (the last known flags hold)");
  if (f.warning) notes.push(f.warning);
  const note = $("#fleet-note");
  note.textContent = notes.join(" · ") || "connected: operator flags are shared with every replica below";
  note.classList.toggle("error", notes.length > 0);
  $("#fleet-replicas tbody").replaceChildren(...f.replicas.map((m) => {
    const marks = [m.stale ? "stale" : "live"];
    if (m.name_shared) marks.push("name-shared");
    if (m.digest_differs) marks.push("digest-differs");
    const windows = (m.windows || []).map((w) => w.profile + " " + w.state.replace("_", " ")).join(", ") || "none";
    return el("tr", { class: "replica " + marks.join(" ") + (m.replica === f.replica ? " own" : ""), "data-replica": m.replica },
      el("td", {}, m.replica + (m.name_shared ? " (name shared)" : "")), el("td", {}, m.instance),
      el("td", { class: "n" }, seconds(Math.max(0, Date.parse(at) - Date.parse(m.at))) + " ago" + (m.stale ? " (stale)" : "")),
      el("td", { class: "n" }, m.live_runs), el("td", {}, windows),
      el("td", { class: "digest" }, m.digest.slice(0, 12) + (m.digest_differs ? " (differs)" : "")));
  }));
}

async function refreshChart() {
  const view = $("#run-view");
  if (!selected) { view.hidden = true; return; }
  view.hidden = false;
  $("#run-id").textContent = selected;
  try {
    const blob = await (await api("GET", "/admin/runs/" + encodeURIComponent(selected) + "/timeline")).blob();
    const url = URL.createObjectURL(blob);
    const img = $("#run-chart");
    img.alt = "timeline of run " + selected;
    img.src = url;
    if (chartURL) URL.revokeObjectURL(chartURL);
    chartURL = url;
  } catch (e) {
    status("run " + selected + ": " + e.message, true);
  }
}

// keepFocus notes the field being typed in; the function it returns gives it back its focus and
// caret once a redraw has moved it (a moved element loses focus, and the next keys went nowhere).
function keepFocus() {
  const active = document.activeElement;
  if (!active || active.tagName !== "INPUT") return () => {};
  const [start, end] = [active.selectionStart, active.selectionEnd];
  return () => {
    if (document.activeElement === active || !document.contains(active)) return;
    active.focus();
    active.setSelectionRange(start, end);
  };
}

let timer = null;
async function poll() {
  clearTimeout(timer);
  try {
    const [state, openings] = await Promise.all([
      api("GET", "/admin/state").then((r) => r.json()),
      api("GET", "/admin/openings").then((r) => r.json()),
    ]);
    const typing = keepFocus(); // before profileSection moves the kept forms out of the page
    const sections = state.profiles.map(profileSection);
    $("#profiles").replaceChildren(...(sections.length ? sections : [el("p", { class: "empty" }, "no profiles")]));
    typing();
    renderOpenings(openings.openings);
    renderFleet(state.fleet, state.at);
    document.body.dataset.at = state.at;
    status("updated " + new Date(state.at).toLocaleTimeString() + " · generation " + state.generation);
    if (!painted) { painted = true; window.plimsollFirstPaint = performance.now(); }
    if (selected) refreshChart();
  } catch (e) {
    status(e.message, true);
  }
  timer = setTimeout(poll, POLL_MS);
}

$("#token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem("plimsoll-admin-token", $("#token").value.trim());
  $("#token").value = "";
  poll();
});
$("#run-close").addEventListener("click", () => { selected = null; refreshChart(); });
poll();
