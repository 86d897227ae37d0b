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
}
declare const document: { getElementById(id: string): PageElement | null; querySelectorAll(selector: string): Iterable<PageElement> };

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
async function invoke(url: string, traceId: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(`${url}/hermes/v1/invoke`, {
    method: "POST",
    headers: { "content-type": "application/hermes+json", ...headers },
    body: JSON.stringify({ ...SEED, meta: { ...SEED.meta, trace_id: traceId } }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { payload: any }).payload;
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
    expect(await page.locator("#summary").textContent()).toContain("2 of 2 actors healthy");
    expect((await invoke(url, "dash-after-restart")).result).toBe(4);

    await page.screenshot({ path: join(SHOT_DIR, "dashboard-restarted.png"), fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });
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
    await refused.screenshot({ path: join(SHOT_DIR, "dashboard-no-token.png") });

    const wrong = await s.browser!.newPage();
    await wrong.goto(`${url}/?token=nope`, { timeout: WAIT_MS });
    await wrong.waitForFunction(() => document.getElementById("status")?.textContent?.includes("401"), undefined, { timeout: WAIT_MS });
    expect(await wrong.locator("#status").textContent()).toContain("refused this token");
    expect(await wrong.locator("#actors tbody").textContent()).toBe("no data yet");
    expect(pageErrors).toEqual([]);
  });
});
