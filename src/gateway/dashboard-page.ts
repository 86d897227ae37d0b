/**
 * The live dashboard: one self-contained page (no build step, no external assets) that polls
 * `/api/overview` every second and shows the actors with their health, restarts, queue depth
 * and message rates, and the most recent traces through the gateway. A token given as
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
</style>
</head>
<body>
<h1>${title}</h1>
<div class="sub"><span id="status">connecting…</span><span id="summary"></span></div>
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
function setStale(stale) { for (const t of document.querySelectorAll("table")) t.classList.toggle("stale", stale); }
function showProblem(text) {
  const status = document.getElementById("status");
  status.textContent = text + ", retrying every second";
  status.className = "stale";
  setStale(true); // what is still shown is no longer current
}
let shownTrace = null;
async function showTrace(id) {
  shownTrace = id;
  const response = await fetch("/api/trace/" + encodeURIComponent(id), { headers: token ? { authorization: "Bearer " + token } : {} });
  document.getElementById("trace-tree").textContent = response.ok ? (await response.json()).text : "could not load the trace (HTTP " + response.status + ")";
}
async function refresh() {
  let response;
  try {
    response = await fetch("/api/overview", { headers: token ? { authorization: "Bearer " + token } : {} });
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
    showProblem("unreadable overview (" + error.message + ")");
  }
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
    cell(row, e.address); cell(row, e.health, e.health); cell(row, e.pid ?? "–", "num"); cell(row, e.restarts, "num");
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
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
