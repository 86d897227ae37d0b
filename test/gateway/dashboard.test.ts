/**
 * The live dashboard in a real browser: Debian's headless Chromium, driven by playwright-core,
 * against a real mesh with its gateway. Every wait is for a condition on the page, with a deadline.
 * Screenshots go to $HM_DASHBOARD_SCREENSHOTS when set (to look at them), else to a temp dir.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { tempDir } from "../helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const NO_CHROMIUM = HAS_CHROMIUM ? "" : ` (SKIPPED: ${CHROMIUM} is missing; apt-get install chromium)`;
/** The flags this machine's closed network needs (no background connections, no QUIC). */
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const WAIT_MS = 15_000;

/** The page's DOM, as far as the functions run inside it use it (the project compiles without the DOM lib). */
interface PageElement {
  textContent: string | null;
  cells: ArrayLike<PageElement>;
  getAttribute(name: string): string | null;
}
declare const document: { getElementById(id: string): PageElement | null; querySelector(selector: string): PageElement | null; querySelectorAll(selector: string): Iterable<PageElement> };

const MESH = `
mesh:
  name: dash-test
supervisor:
  intensity: 5
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: calculator
      module: {ACTORS}/calculator.ts
    # Its own supervisor: a poison message crashes the crasher ten times before it is dead-lettered.
    - supervisor: poison
      intensity: 100
      backoff: { initial_ms: 1, max_ms: 5 }
      children:
        - actor: crasher
          module: {FIXTURES}/crasher.ts
`;
const SEED = {
  meta: { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "d4e5f6", ttl: 300, trace_id: "t7u8v9" },
  payload: { task_id: "x1y2z3", tool: "calculator", expression: "2+2" },
};
const TOKEN = "dash-s3cret";
const shots = process.env.HM_DASHBOARD_SCREENSHOTS ? undefined : tempDir("hm-dash-");
const SHOT_DIR = process.env.HM_DASHBOARD_SCREENSHOTS ?? shots!.path;
afterAll(() => shots?.[Symbol.dispose]());

/**
 * Starts the mesh and the browser side by side. If one fails, the other is still returned (to be
 * closed by afterAll) in `partial` before the failure is thrown.
 */
async function start(gateway: { port: number; token?: string }, partial: { t?: TestMesh; browser?: Browser }): Promise<void> {
  const [mesh, browser] = await Promise.allSettled([
    startTestMesh(MESH, { gateway }),
    // playwright gives every launch a fresh, empty --user-data-dir and runs headless.
    chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: WAIT_MS }),
  ]);
  if (mesh.status === "fulfilled") partial.t = mesh.value;
  if (browser.status === "fulfilled") partial.browser = browser.value;
  if (mesh.status === "rejected") throw mesh.reason;
  if (browser.status === "rejected") throw browser.reason;
}

/** POSTs the seed's calculator request with its own trace id; returns the answer's payload. */
function invoke(url: string, traceId: string, headers: Record<string, string> = {}): Promise<any> {
  return invokeActor(url, SEED.meta.receiver_id, SEED.payload, traceId, headers);
}

/** POSTs a request in the seed's meta form to `receiver` with `payload`; returns the answer's payload. */
async function invokeActor(url: string, receiver: string, payload: object, traceId: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(`${url}/hermes/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/hermes+json", ...headers },
    body: JSON.stringify({ meta: { ...SEED.meta, receiver_id: receiver, trace_id: traceId }, payload }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { payload: any }).payload;
}

/** Waits until `condition` (run in the page with `arg`) holds, failing with `what` at the deadline. */
// `condition` runs in the page: its argument crosses over as JSON, so its type is not checked here.
async function waitInPage(page: Page, condition: (arg: any) => boolean, arg: unknown, what: string, timeout = WAIT_MS): Promise<void> {
  await page.waitForFunction(condition, arg, { timeout, polling: 100 }).catch((error) => {
    throw new Error(`the dashboard never showed ${what}: ${(error as Error).message.split("\n")[0]}`);
  });
}

/** Runs in the page: a number attribute of the actor's chart (`rate-chart` or `latency-chart`), 0 without the chart. */
function chartAttribute({ address, chart, name }: { address: string; chart: string; name: string }): number {
  return Number(document.querySelector(`#charts svg.${chart}[data-address="${address}"]`)?.getAttribute(name) ?? 0);
}

/** Runs in the page: whether a timeline row of `actor` of `kind` has `text` in it. */
function hasTimelineRow({ actor, kind, text }: { actor: string; kind: string; text: string }): boolean {
  return [...document.querySelectorAll(`#timeline tbody tr[data-actor="${actor}"][data-kind="${kind}"]`)].some((r) => (r.textContent ?? "").includes(text));
}

/** The text of an actor row's cell under the column headed `column`, or null without that row. */
function actorCell(page: Page, address: string, column: string): Promise<string | null> {
  return page.evaluate(readActorCell, { address, column });
}

/** Runs in the page (also inside waitForFunction, so it is self-contained). */
function readActorCell({ address, column }: { address: string; column: string }): string | null {
  const headers = [...document.querySelectorAll("#actors thead th")].map((th) => th.textContent?.trim());
  const index = headers.indexOf(column);
  const row = [...document.querySelectorAll("#actors tbody tr")].find((r) => r.cells[0]?.textContent === address);
  if (index < 0 || !row) return null;
  return row.cells[index]?.textContent ?? null;
}

async function waitForCell(page: Page, address: string, column: string, accept: string, what: string): Promise<void> {
  // `accept` is a predicate's source over the cell text `v`, evaluated in the page.
  await page
    .waitForFunction(
      ({ address, column, accept, read }) => {
        const v = new Function(`return (${read})`)()({ address, column });
        return v !== null && new Function("v", `return ${accept}`)(v);
      },
      { address, column, accept, read: readActorCell.toString() },
      { timeout: WAIT_MS, polling: 100 },
    )
    .catch((error) => {
      throw new Error(`the dashboard never showed ${what}: ${(error as Error).message.split("\n")[0]}`);
    });
}

describe("dashboard in headless Chromium", () => {
  const s: { t?: TestMesh; browser?: Browser } = {};
  beforeAll(async () => {
    if (HAS_CHROMIUM) await start({ port: 0 }, s);
  });
  afterAll(async () => {
    await Promise.allSettled([s.browser?.close(), s.t?.[Symbol.asyncDispose]()]);
  });

  test.skipIf(!HAS_CHROMIUM)(`shows the mesh, its actors live, a restart after kill -9 and recent traces${NO_CHROMIUM}`, async () => {
    const url = s.t!.mesh.gateway!.url;
    const page = await s.browser!.newPage({ viewport: { width: 1200, height: 700 } });
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));

    await page.goto(`${url}/`, { timeout: WAIT_MS });
    expect(await page.title()).toContain("dash-test");
    await page.waitForFunction(() => document.getElementById("status")?.textContent?.startsWith("live"), undefined, { timeout: WAIT_MS });
    for (const address of ["echo", "calculator"]) await waitForCell(page, address, "Health", `v === "healthy"`, `${address} healthy`);
    expect(await page.locator("#traces tbody").textContent()).toBe("no requests through the gateway yet");
    expect(await actorCell(page, "calculator", "Restarts")).toBe("0");
    expect(await actorCell(page, "gateway", "Health")).toBeNull(); // clients (the gateway itself) are not actors

    // Live counters: requests through the gateway show up in the calculator's Handled cell.
    const before = Number(await actorCell(page, "calculator", "Handled"));
    const traceId = `dash-${crypto.randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 4; i++) expect((await invoke(url, i === 3 ? traceId : `dash-warm-${i}`)).result).toBe(4);
    await waitForCell(page, "calculator", "Handled", `Number(v) >= ${before + 4}`, `the calculator's Handled count past ${before + 4}`);

    // Live charts: traffic to echo becomes points of its msg/s chart (a non-zero rate) and of its p50/p99 chart.
    // First a point without it: the counters the next point is the difference from.
    await waitInPage(page, (a) => Number(document.querySelector(`#charts svg.rate-chart[data-address="${a}"]`)?.getAttribute("data-points-rate") ?? 0) > 0, "echo", "a first point in echo's msg/s chart");
    for (let i = 0; i < 20; i++) expect((await invokeActor(url, "echo", { n: i }, `dash-echo-${i}`)).n).toBe(i);
    await waitInPage(page, (a) => {
      const read = (name: string) => Number(document.querySelector(`#charts svg.rate-chart[data-address="${a}"]`)?.getAttribute(name) ?? 0);
      return read("data-points-rate") > 0 && read("data-peak") > 0;
    }, "echo", "a point with a non-zero rate in echo's msg/s chart");
    expect(await page.evaluate(chartAttribute, { address: "echo", chart: "latency-chart", name: "data-points-p50" })).toBeGreaterThan(0);
    expect(await page.evaluate(chartAttribute, { address: "echo", chart: "latency-chart", name: "data-points-p99" })).toBeGreaterThan(0);
    expect(await page.locator('#charts svg.rate-chart[data-address="echo"] path.line').count()).toBe(1);
    expect(await page.locator('#charts .name[data-address="echo"]').textContent()).toBe("echo");
    // The same history as JSON: one window at a fixed step, echo's series aligned with the sample times.
    const history = (await (await fetch(`${url}/api/history`)).json()) as any;
    expect(history).toMatchObject({ step_ms: 2000, window_ms: 600_000, limits: { actors: 100, timeline: 200, dead_letters: 200 } });
    expect(history.actors.echo.rate).toHaveLength(history.times.length);
    expect(history.actors.echo.rate.some((r: number | null) => r !== null && r > 0)).toBe(true);
    expect(history.actors.echo.p99_ms.some((ms: number | null) => ms !== null && ms > 0)).toBe(true);
    expect(((await (await fetch(`${url}/api/history?after=${history.seq}`)).json()) as any).timeline).toEqual([]);

    // The request's trace id is in the recent traces, with its target and outcome.
    const traceRow = page.locator("#traces tbody tr", { hasText: traceId });
    await traceRow.waitFor({ timeout: WAIT_MS });
    const traceCells = await traceRow.locator("td").allTextContents();
    expect(traceCells).toContain(traceId);
    expect(traceCells).toContain("capability:calculator"); // the seed's receiver_id is no address: routed by its tool
    expect(traceCells).toContain("ok");
    // Clicking it shows the flow across actors, read from the event logs.
    await traceRow.click();
    await page.waitForFunction(() => (document.getElementById("trace-tree")?.textContent ?? "").includes("calculator  request"), undefined, { timeout: WAIT_MS });
    expect(await page.locator("#trace-tree").textContent()).toContain("gateway  request → capability:calculator");

    await page.screenshot({ path: join(SHOT_DIR, "dashboard-live.png"), fullPage: true });

    // kill -9 the calculator: the supervisor restarts it, the page shows one restart and a new pid.
    const oldPid = s.t!.pid("calculator");
    process.kill(oldPid, "SIGKILL");
    await waitForCell(page, "calculator", "Restarts", `v === "1"`, "the calculator's restart");
    await waitForCell(page, "calculator", "Health", `v === "healthy"`, "the restarted calculator healthy");
    await waitForCell(page, "calculator", "PID", `v !== "${oldPid}" && v !== "–"`, "the restarted calculator's new pid");
    expect(await page.locator("#summary").textContent()).toContain("3 of 3 actors healthy");
    // The timeline has the crash (killed by SIGKILL, the old pid) and the restart (the new pid).
    await waitInPage(page, hasTimelineRow, { actor: "calculator", kind: "crash", text: "SIGKILL" }, "the calculator's crash on the timeline");
    await waitInPage(page, hasTimelineRow, { actor: "calculator", kind: "restart", text: String(s.t!.pid("calculator")) }, "the calculator's restart on the timeline");
    expect(await page.locator('#timeline tbody tr[data-actor="calculator"][data-kind="crash"]').first().textContent()).toContain(`pid ${oldPid}`);
    expect(Number(await page.locator("#timeline-chart").getAttribute("data-events"))).toBeGreaterThanOrEqual(2);
    expect(await page.locator("#timeline-chart .mark.crash title").first().textContent()).toContain("calculator: crash");
    expect((await invoke(url, "dash-after-restart")).result).toBe(4);

    await page.screenshot({ path: join(SHOT_DIR, "dashboard-restarted.png"), fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  test.skipIf(!HAS_CHROMIUM)(`shows a poison message's dead letter and the crashes it caused${NO_CHROMIUM}`, async () => {
    const url = s.t!.mesh.gateway!.url;
    const page = await s.browser!.newPage({ viewport: { width: 1200, height: 700 } });
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(`${url}/`, { timeout: WAIT_MS });
    await page.waitForFunction(() => document.getElementById("status")?.textContent?.startsWith("live"), undefined, { timeout: WAIT_MS });
    // "live" comes with the first status poll; the history (dead letters) with its own first answer.
    await page.waitForFunction(() => document.querySelector("#dead-letters tbody")?.textContent !== "no data yet", undefined, { timeout: WAIT_MS });
    expect(await page.locator("#dead-letters tbody").textContent()).toBe("no dead letters");

    // Every delivery kills the crasher: after 10 attempts the gateway gives up, answers code 10 and keeps the dead letter.
    // Markup in a string from the mesh (here the trace id) must show as text, never as elements.
    const traceId = `dash-poison-<b id="injected">${crypto.randomUUID().slice(0, 8)}</b>`;
    const answer = await invokeActor(url, "crasher", { op: "die" }, traceId);
    expect(answer.error_code).toBe(10);
    const row = page.locator("#dead-letters tbody tr", { hasText: traceId });
    await row.waitFor({ timeout: WAIT_MS });
    const cells = await row.locator("td").allTextContents();
    expect(cells.slice(1, 4)).toEqual(["gateway", "crasher", "10 UNAVAILABLE"]);
    expect(cells[4]).toContain("gave up after 10 delivery attempts");
    expect(cells[5]).toBe(traceId);
    expect(await page.locator("#injected").count()).toBe(0);
    await waitInPage(page, hasTimelineRow, { actor: "crasher", kind: "crash", text: "exit code 3" }, "the crasher's crashes on the timeline");
    // The last restarts reach the timeline a sample or two after the dead letter (the supervisor's log is flushed 200 ms after a batch's first line).
    await page.waitForFunction(() => Array.from(document.querySelectorAll('#timeline tbody tr[data-actor="crasher"][data-kind="restart"]')).length >= 9, undefined, { timeout: WAIT_MS });
    expect(await page.locator('#timeline tbody tr[data-actor="crasher"][data-kind="restart"]').count()).toBeGreaterThanOrEqual(9);

    await page.screenshot({ path: join(SHOT_DIR, "dashboard-dead-letter.png"), fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});

describe("dashboard with a gateway token in headless Chromium", () => {
  const s: { t?: TestMesh; browser?: Browser } = {};
  beforeAll(async () => {
    if (HAS_CHROMIUM) await start({ port: 0, token: TOKEN }, s);
  });
  afterAll(async () => {
    await Promise.allSettled([s.browser?.close(), s.t?.[Symbol.asyncDispose]()]);
  });

  test.skipIf(!HAS_CHROMIUM)(`works with ?token=, and without it shows that the token is refused (401)${NO_CHROMIUM}`, async () => {
    const url = s.t!.mesh.gateway!.url;
    const traceId = `dash-tok-${crypto.randomUUID().slice(0, 8)}`;
    expect((await invoke(url, traceId, { authorization: `Bearer ${TOKEN}` })).result).toBe(4);

    const page = await s.browser!.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(`${url}/?token=${TOKEN}`, { timeout: WAIT_MS });
    expect(await page.title()).toContain("dash-test");
    await waitForCell(page, "calculator", "Health", `v === "healthy"`, "the calculator healthy with the token");
    await waitForCell(page, "echo", "Health", `v === "healthy"`, "echo healthy with the token");
    await page.locator("#traces tbody tr", { hasText: traceId }).waitFor({ timeout: WAIT_MS });

    const refused = await s.browser!.newPage();
    await refused.goto(`${url}/`, { timeout: WAIT_MS }); // the page itself is open; its API calls are not
    await refused.waitForFunction(() => document.getElementById("status")?.textContent?.includes("401"), undefined, { timeout: WAIT_MS });
    const status = refused.locator("#status");
    expect(await status.getAttribute("class")).toBe("stale");
    expect(await status.textContent()).toMatch(/token/i);
    expect(await refused.locator("#actors tbody").textContent()).toBe("no data yet"); // nothing leaks without the token
    expect(await refused.locator("#traces tbody").textContent()).toBe("no data yet");
    expect(await refused.locator("#dead-letters tbody").textContent()).toBe("no data yet");
    expect(await refused.locator("#charts .row").count()).toBe(0);
    expect((await fetch(`${url}/api/history`)).status).toBe(401); // the history is behind the token like the rest
    expect((await fetch(`${url}/api/history`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await fetch(`${url}/api/history?token=${TOKEN}`)).status).toBe(401); // no query token outside the WebSocket
    const rebound = await fetch(`${url}/api/history`, { headers: { host: "rebind.evil.example", authorization: `Bearer ${TOKEN}` } });
    expect(rebound.status).toBe(403);
    const crossSite = await fetch(`${url}/api/history`, { headers: { origin: "https://evil.example", authorization: `Bearer ${TOKEN}` } });
    expect(crossSite.status).toBe(403);
    await refused.screenshot({ path: join(SHOT_DIR, "dashboard-no-token.png") });

    const wrong = await s.browser!.newPage();
    await wrong.goto(`${url}/?token=nope`, { timeout: WAIT_MS });
    await wrong.waitForFunction(() => document.getElementById("status")?.textContent?.includes("401"), undefined, { timeout: WAIT_MS });
    expect(await wrong.locator("#status").textContent()).toContain("refused this token");
    expect(await wrong.locator("#actors tbody").textContent()).toBe("no data yet");
    expect(pageErrors).toEqual([]);
  });
});
