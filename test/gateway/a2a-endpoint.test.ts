/** The A2A routes on a hono app in this process (src/gateway/a2a-endpoint.ts): what close() ends. */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { Registry } from "../../mesh/registry.ts";
import { mountA2A } from "../../src/gateway/a2a-endpoint.ts";
import { tempDir } from "../helpers.ts";

/** A mesh node no request reaches: these calls never run a task. */
const node = { address: "gateway", requestEnvelope: () => Promise.reject(new HermesError(ErrorCode.UNROUTABLE, "not in this test")) };

const body = (response: Response): Promise<any> => response.json();
const getTask = (app: Hono) =>
  app.request("/a2a", { method: "POST", headers: { "content-type": "application/json", "a2a-version": "1.0" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }) });

describe("mountA2A", () => {
  test("close() closes the task store the first call opened (its write-ahead log is folded in and removed); later calls are -32603", async () => {
    using dir = tempDir();
    const app = new Hono();
    const routes = mountA2A(app, { node, registry: new Registry(), meshName: "unit", dir: dir.path });
    const db = join(dir.path, "data", "a2a-tasks.db");
    expect(existsSync(db)).toBe(false); // nothing is opened before the first A2A call
    expect((await body(await getTask(app))).error.code).toBe(-32001);
    expect(existsSync(`${db}-wal`)).toBe(true);
    await routes.close();
    expect(existsSync(`${db}-wal`)).toBe(false);
    const after = await getTask(app);
    expect(after.status).toBe(500);
    expect(await body(after)).toMatchObject({ error: { code: -32603, message: expect.stringContaining("the gateway is stopping") } });
    await routes.close(); // twice is harmless
  });
});
