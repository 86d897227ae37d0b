/**
 * The live dashboard: one self-contained page (no build step, no external assets) that polls
 * `/api/overview` and `/api/history` every second. It draws, per actor, live SVG charts of
 * messages per second and p50/p99 handling time over the last minutes, a timeline of restarts
 * and crashes, and the dead letters; below them the actors with their health, restarts, queue
 * depth and message rates, and the most recent traces through the gateway. Every string from
 * the mesh goes in as text (textContent, SVG attributes of numbers only). A token given as
 * `?token=` in the page URL is sent with its API calls as `Authorization: Bearer` (the API
 * takes no query token). A trace lookup that stopped early says so under its tree.
 *
 * @example
 * app.get("/", (c) => c.html(dashboardPage("demo")));
 */
export function dashboardPage(meshName: string): string {
  const title = `hermes-mesh · ${escapeHtml(meshName)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
  :root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --muted: #6e7781; }
  body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; max-width: 1100px; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 15px; margin: 24px 0 8px; }
  .sub { color: var(--muted); margin-bottom: 16px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 16px 4px 0; border-bottom: 1px solid #8883; font-variant-numeric: tabular-nums; }
  th { font-weight: 600; color: var(--muted); }
  th[title] { cursor: help; text-decoration: underline dotted #8888; }
  .num { text-align: right; }
  .hint { color: var(--muted); font-weight: normal; font-size: 13px; }
  td.empty { color: var(--muted); font-style: italic; }
  table.stale { opacity: 0.45; }
  .healthy { color: var(--ok); } .down, .unhealthy { color: var(--bad); } .starting { color: var(--warn); }
  .error { color: var(--bad); } .ok { color: var(--ok); }
  code { font-size: 12px; }
  #status.stale { color: var(--bad); }
  td.trace-link { text-decoration: underline dotted; cursor: pointer; }
  #trace-tree { font-size: 12px; white-space: pre; }
  .charts { display: grid; grid-template-columns: minmax(120px, 180px) 1fr 1fr; gap: 4px 16px; align-items: center; }
  .charts .head { color: var(--muted); font-weight: 600; }
  .charts .name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  svg.chart { width: 100%; height: 72px; display: block; border-bottom: 1px solid #8883; }
  svg text { font-size: 10px; fill: var(--muted); }
  svg path.line { fill: none; stroke-width: 1.5; }
  svg .rate { stroke: #0969da; fill: #0969da; } svg .p50 { stroke: #8250df; fill: #8250df; } svg .p99 { stroke: #bc4c00; fill: #bc4c00; stroke-dasharray: 4 3; }
  svg .grid { stroke: #8884; }
  svg .crash { fill: var(--bad); } svg .restart { fill: var(--ok); } svg .exit { fill: var(--muted); } svg .gave_up { fill: #82071e; }
  .live.stale { opacity: 0.45; }
  .scroll { max-height: 280px; overflow-y: auto; }
  .key { display: inline-block; width: 14px; border-top: 2px solid; vertical-align: middle; margin: 0 4px 0 10px; }
</style>
</head>
<body>
<h1>${title}</h1>
<div class="sub"><span id="status">connecting…</span><span id="summary"></span></div>
<h2>Throughput and handling time <span class="hint" id="charts-hint">(last 10 minutes, a point every 2 s)<span class="key" style="color:#0969da"></span>msg/s<span class="key" style="color:#8250df"></span>p50<span class="key" style="color:#bc4c00;border-top-style:dashed"></span>p99</span></h2>
<div id="charts" class="charts live"><div class="head">Actor</div><div class="head">Messages per second</div><div class="head">Handling time, ms</div><div class="empty" id="charts-empty">no data yet</div></div>
<h2>Restarts and crashes <span class="hint">(on the charts' time axis: <span style="color:var(--bad)">●</span> crash <span style="color:var(--ok)">▲</span> restart <span style="color:var(--muted)">●</span> exit <span style="color:#82071e">■</span> supervisor gave up)</span></h2>
<svg id="timeline-chart" class="live" width="100%" height="24" data-events="0"></svg>
<div class="scroll"><table id="timeline"><thead><tr><th>Time</th><th>Actor</th><th>What</th><th>Detail</th></tr></thead><tbody><tr><td class="empty" colspan="4">no data yet</td></tr></tbody></table></div>
<h2>Dead letters <span class="hint">(envelopes given up after the maximum delivery attempts, newest first)</span></h2>
<div class="scroll"><table id="dead-letters"><thead><tr><th>Time</th><th>From</th><th>To</th><th>Code</th><th>Reason</th><th>Trace</th><th class="num">Count</th></tr></thead><tbody><tr><td class="empty" colspan="7">no data yet</td></tr></tbody></table></div>
<h2>Actors</h2>
<table id="actors"><thead><tr><th>Address</th><th>Health</th><th class="num">PID</th><th class="num" title="times the supervisor restarted it">Restarts</th><th class="num" title="messages waiting in its mailbox">Queue</th><th class="num" title="requests it is handling now">In flight</th><th class="num" title="messages handled since the mesh started">Handled</th><th class="num" title="messages handled per second since the last update">Msg/s</th><th class="num" title="handlers that failed">Errors</th><th>Capabilities</th></tr></thead><tbody><tr><td class="empty" colspan="10">no data yet</td></tr></tbody></table>
<h2>Recent traces <span class="hint">(requests through this gateway, newest first)</span></h2>
<table id="traces"><thead><tr><th>Time</th><th>Trace</th><th>Kind</th><th>Target</th><th class="num">Duration</th><th>Outcome</th></tr></thead><tbody><tr><td class="empty" colspan="6">no data yet</td></tr></tbody></table>
<h2>Trace <span class="hint" id="trace-hint">(click a trace above: the flow across actors, from the event logs)</span></h2>
<pre id="trace-tree"></pre>
<script>
const token = new URLSearchParams(location.search).get("token");
const previous = new Map();
let previousAt = 0;
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td; }
function sum(record) { return Object.values(record || {}).reduce((a, b) => a + b, 0); }
function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
function emptyRow(body, columns, text) { const td = cell(body.insertRow(), text, "empty"); td.colSpan = columns; }
function setStale(stale) { for (const t of document.querySelectorAll("table, .live")) t.classList.toggle("stale", stale); }
function authHeaders() { return token ? { authorization: "Bearer " + token } : {}; }
function showProblem(text) {
  const status = document.getElementById("status");
  status.textContent = text + ", retrying every second";
  status.className = "stale";
  setStale(true); // what is still shown is no longer current
}
let shownTrace = null;
async function showTrace(id) {
  shownTrace = id;
  const response = await fetch("/api/trace/" + encodeURIComponent(id), { headers: authHeaders() });
  document.getElementById("trace-tree").textContent = response.ok ? (await response.json()).text : "could not load the trace (HTTP " + response.status + ")";
}
async function refresh() {
  let response;
  try {
    response = await fetch("/api/overview", { headers: authHeaders() });
  } catch (error) {
    return showProblem("gateway unreachable (" + error.message + ")");
  }
  if (response.status === 401) {
    return showProblem(token ? "the gateway refused this token (HTTP 401)" : "this gateway needs a token (HTTP 401): open the page as /?token=<token>");
  }
  if (response.status === 403) {
    const refusal = await response.json().catch(() => ({}));
    return showProblem("the gateway refused this page (HTTP 403: " + (refusal.reason || "not allowed") + ")");
  }
  if (!response.ok) return showProblem("the gateway answered HTTP " + response.status);
  try {
    render(await response.json());
  } catch (error) {
    return showProblem("unreadable overview (" + error.message + ")");
  }
  await refreshHistory();
}
function render(data) {
  const seconds = previousAt ? (data.at - previousAt) / 1000 : 0;
  const actors = data.entries.filter((e) => e.kind !== "client");
  const body = document.querySelector("#actors tbody");
  body.replaceChildren();
  for (const e of actors) {
    const stats = data.stats[e.address] || {};
    const handled = sum(stats.handled);
    const before = previous.get(e.address);
    const rate = seconds > 0 && before !== undefined && handled >= before ? ((handled - before) / seconds).toFixed(1) : "–";
    previous.set(e.address, handled);
    const row = body.insertRow();
    row.dataset.address = e.address;
    // External members (outside the supervisor tree) and other hosts' members are named as such.
    cell(row, e.address + (e.external ? " (external)" : "") + (e.host ? " @" + e.host : "")); cell(row, e.health, e.health); cell(row, e.pid ?? "–", "num"); cell(row, e.restarts, "num");
    cell(row, e.queueDepth, "num"); cell(row, e.inFlight, "num"); cell(row, handled, "num"); cell(row, rate, "num");
    cell(row, sum(stats.errors), sum(stats.errors) ? "num error" : "num"); cell(row, (e.capabilities || []).join(", "));
  }
  if (actors.length === 0) emptyRow(body, 10, "no actors registered");
  previousAt = data.at;
  const healthy = actors.filter((e) => e.health === "healthy").length;
  document.getElementById("summary").textContent = " · " + healthy + " of " + plural(actors.length, "actor") + " healthy · " + plural(actors.reduce((a, e) => a + e.restarts, 0), "restart");
  const traces = document.querySelector("#traces tbody");
  traces.replaceChildren();
  for (const t of data.traces) {
    const row = traces.insertRow();
    cell(row, new Date(t.at).toLocaleTimeString()); cell(row, t.trace_id, "trace-link"); cell(row, t.route); cell(row, t.target);
    row.onclick = () => showTrace(t.trace_id);
    cell(row, t.duration_ms.toFixed(1) + " ms", "num"); cell(row, t.status === "ok" ? "ok" : "error " + t.error_code, t.status);
  }
  if (data.traces.length === 0) emptyRow(traces, 6, "no requests through the gateway yet");
  const status = document.getElementById("status");
  status.textContent = "live · updated " + new Date(data.at).toLocaleTimeString();
  status.className = "";
  setStale(false);
}
// The history: the server's points since the page opened, kept here and trimmed to the window.
const SVG = "http://www.w3.org/2000/svg";
let hist = emptyHistory();
function emptyHistory() { return { started: undefined, seq: 0, windowMs: 600000, stepMs: 2000, at: 0, times: [], actors: new Map(), timeline: [], dead: [] }; }
let historyBusy = false;
async function refreshHistory() {
  if (historyBusy) return; // two answers to the same cursor would add their points twice
  historyBusy = true;
  let data;
  try {
    const response = await fetch("/api/history?after=" + hist.seq, { headers: authHeaders() });
    if (!response.ok) return; // the overview's status line says what is wrong
    data = await response.json();
  } catch { return; } finally { historyBusy = false; }
  if (hist.started !== undefined && data.started !== hist.started) { hist = emptyHistory(); return refreshHistory(); } // a new gateway: its cursor starts over
  absorb(data);
  drawCharts(); drawTimeline(); drawDeadLetters();
}
function absorb(data) {
  const before = hist.times.length, added = data.times.length;
  hist.started = data.started; hist.seq = data.seq; hist.windowMs = data.window_ms; hist.stepMs = data.step_ms; hist.at = data.at;
  for (const address of Object.keys(data.actors)) {
    if (!hist.actors.has(address)) hist.actors.set(address, { rate: new Array(before).fill(null), p50: new Array(before).fill(null), p99: new Array(before).fill(null) });
  }
  for (const [address, s] of hist.actors) {
    const d = Object.hasOwn(data.actors, address) ? data.actors[address] : undefined, none = new Array(added).fill(null);
    s.rate.push(...(d ? d.rate : none)); s.p50.push(...(d ? d.p50_ms : none)); s.p99.push(...(d ? d.p99_ms : none));
  }
  hist.times.push(...data.times);
  hist.timeline.push(...data.timeline); hist.timeline.splice(0, hist.timeline.length - data.limits.timeline);
  hist.dead.push(...data.dead_letters); hist.dead.splice(0, hist.dead.length - data.limits.dead_letters);
  let old = 0;
  while (old < hist.times.length && hist.times[old] < data.at - data.window_ms) old++;
  hist.times.splice(0, old);
  for (const [address, s] of hist.actors) {
    s.rate.splice(0, old); s.p50.splice(0, old); s.p99.splice(0, old);
    if (!s.rate.some((v) => v !== null) && !s.p50.some((v) => v !== null)) hist.actors.delete(address);
  }
}
function svgChild(parent, name, attributes) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, String(v));
  parent.appendChild(el);
  return el;
}
function svgText(parent, x, y, text, anchor) { svgChild(parent, "text", { x, y, "text-anchor": anchor || "start" }).textContent = text; }
function niceCeiling(v) { const p = Math.pow(10, Math.floor(Math.log10(v))); return [1, 2, 2.5, 5, 10].map((m) => m * p).find((c) => c >= v); }
function short(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(2); }
// One chart: lines of the series ({ values, cls }) against hist.times, 0 at the bottom, broken where a value is null.
function drawChart(svg, series, unit, start) {
  const W = Math.round(svg.getBoundingClientRect().width) || 600, H = 72, top = 12, bottom = H - 2;
  svg.replaceChildren();
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  let max = 0, points = 0;
  for (const s of series) for (const v of s.values) if (v !== null && v > max) max = v;
  const ceiling = max > 0 ? niceCeiling(max) : 1;
  svgChild(svg, "line", { x1: 0, x2: W, y1: top, y2: top, class: "grid" });
  svgText(svg, 2, top - 2, short(ceiling) + " " + unit);
  const x = (t) => ((t - start) / (hist.at - start)) * (W - 3), y = (v) => bottom - (v / ceiling) * (bottom - top);
  const latest = [];
  for (const s of series) {
    let d = "", pen = false, last = null, count = 0;
    s.values.forEach((v, i) => {
      if (v === null) { pen = false; return; }
      d += (pen ? "L" : "M") + x(hist.times[i]).toFixed(1) + " " + y(v).toFixed(1);
      pen = true; last = i; count++;
    });
    if (d) svgChild(svg, "path", { d, class: "line " + s.cls });
    // The newest point as a dot: a single point draws no line.
    if (last !== null) { svgChild(svg, "circle", { cx: x(hist.times[last]).toFixed(1), cy: y(s.values[last]).toFixed(1), r: 2, class: s.cls }); latest.push((series.length > 1 ? s.cls + " " : "") + short(s.values[last])); }
    svg.setAttribute("data-points-" + s.cls, String(count));
    points += count;
  }
  svg.setAttribute("data-points", String(points));
  svg.setAttribute("data-peak", String(max));
  svgText(svg, W - 2, top - 2, latest.length ? "latest " + latest.join(" · ") + " " + unit : "no points yet", "end");
}
// Where the time axes start: the window, or less while the page has less (at least a minute), so new points are not squeezed at the right edge.
function viewStart() {
  const floor = hist.at - hist.windowMs;
  let oldest = Math.min(hist.at - 60000, hist.times[0] ?? Infinity);
  const firstEvent = hist.timeline.find((e) => e.at >= floor);
  if (firstEvent) oldest = Math.min(oldest, firstEvent.at);
  return Math.max(floor, oldest);
}
function spanText(ms) { return ms < 120000 ? Math.round(ms / 1000) + " s" : Math.round(ms / 60000) + " min"; }
function drawCharts() {
  const start = viewStart();
  const box = document.getElementById("charts");
  for (const el of [...box.querySelectorAll(".row")]) el.remove();
  document.getElementById("charts-empty").hidden = hist.actors.size > 0;
  document.getElementById("charts-hint").firstChild.textContent = "(the last " + spanText(hist.at - start) + ", up to " + spanText(hist.windowMs) + "; a point every " + hist.stepMs / 1000 + " s, now on the right)";
  for (const [address, s] of [...hist.actors].sort((a, b) => a[0].localeCompare(b[0]))) {
    const name = document.createElement("div");
    name.className = "row name"; name.textContent = address; name.title = address; name.dataset.address = address;
    const rate = svgChild(box, "svg", { class: "row chart rate-chart", "data-address": address });
    box.insertBefore(name, rate);
    drawChart(rate, [{ values: s.rate, cls: "rate" }], "msg/s", start);
    drawChart(svgChild(box, "svg", { class: "row chart latency-chart", "data-address": address }), [{ values: s.p50, cls: "p50" }, { values: s.p99, cls: "p99" }], "ms", start);
  }
}
function describe(e) {
  if (e.kind === "crash" || e.kind === "exit") {
    const how = e.signal ? "signal " + e.signal : typeof e.exit_code === "number" ? "exit code " + e.exit_code : "";
    // The reason only when it says more than the code or signal ("failed to start: ...").
    const more = e.reason && !/^(exit code -?\\d+|killed by SIG\\w+|normal)$/.test(e.reason) ? e.reason : "";
    return [how, e.pid ? "pid " + e.pid : "", more].filter(Boolean).join(", ");
  }
  if (e.kind === "restart") return "restart " + (e.restarts ?? "") + (e.pid ? ", new pid " + e.pid : "");
  return e.reason || "";
}
function drawTimeline() {
  const svg = document.getElementById("timeline-chart"), W = Math.round(svg.getBoundingClientRect().width) || 1000, lane = 16, start = viewStart();
  const shown = hist.timeline.filter((e) => e.at >= start);
  const lanes = [...new Set(shown.map((e) => e.actor))].sort();
  const H = Math.max(1, lanes.length) * lane + 14;
  svg.replaceChildren();
  svg.setAttribute("viewBox", "0 0 " + W + " " + H); svg.setAttribute("height", String(H));
  lanes.forEach((actor, i) => { svgChild(svg, "line", { x1: 0, x2: W, y1: i * lane + 8, y2: i * lane + 8, class: "grid" }); svgText(svg, 2, i * lane + 11, actor); });
  for (const e of shown) {
    const cx = 130 + ((e.at - start) / (hist.at - start)) * (W - 140), cy = lanes.indexOf(e.actor) * lane + 8;
    const mark = e.kind === "restart" ? svgChild(svg, "path", { d: "M" + cx.toFixed(1) + " " + (cy - 5) + "l5 9h-10z" })
      : e.kind === "gave_up" ? svgChild(svg, "rect", { x: (cx - 4).toFixed(1), y: cy - 4, width: 8, height: 8 })
      : svgChild(svg, "circle", { cx: cx.toFixed(1), cy, r: 4 });
    mark.setAttribute("class", "mark " + e.kind);
    svgChild(mark, "title", {}).textContent = new Date(e.at).toLocaleTimeString() + " " + e.actor + ": " + e.kind + " " + describe(e);
  }
  svgText(svg, 130, H - 2, "−" + spanText(hist.at - start)); svgText(svg, W - 2, H - 2, "now", "end");
  svg.setAttribute("data-events", String(shown.length));
  const body = document.querySelector("#timeline tbody");
  body.replaceChildren();
  for (const e of hist.timeline.slice(-30).reverse()) {
    const row = body.insertRow();
    row.dataset.actor = e.actor; row.dataset.kind = e.kind;
    cell(row, new Date(e.at).toLocaleTimeString()); cell(row, e.actor); cell(row, e.kind, e.kind === "crash" || e.kind === "gave_up" ? "error" : e.kind === "restart" ? "ok" : ""); cell(row, describe(e));
  }
  if (hist.timeline.length === 0) emptyRow(body, 4, "no restarts or crashes in the last " + Math.round(hist.windowMs / 60000) + " minutes");
}
function drawDeadLetters() {
  const body = document.querySelector("#dead-letters tbody");
  body.replaceChildren();
  for (const d of hist.dead.slice(-50).reverse()) {
    const row = body.insertRow();
    cell(row, new Date(d.at).toLocaleTimeString()); cell(row, d.sender); cell(row, d.target ?? "–");
    cell(row, d.code === undefined ? "–" : d.code + (d.code_name ? " " + d.code_name : ""), "error"); cell(row, d.reason); cell(row, d.trace_id ?? "–"); cell(row, d.count, "num");
  }
  if (hist.dead.length === 0) emptyRow(body, 7, "no dead letters");
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
