/**
 * The second socket adapter: the whole transport conformance suite again, with node:net sockets
 * (what Deno provides) instead of Bun's, in a process of its own so that the choice
 * (HERMES_SOCKET_RUNTIME=node) reaches the sender and every receiver it spawns.
 */
import { expect, test } from "bun:test";
import { runTransportSuite } from "../helpers.ts";

test("the transport conformance suite passes over node:net sockets, Unix and TCP", () => {
  const run = runTransportSuite({ HERMES_SOCKET_RUNTIME: "node" });
  const report = run.report;
  expect(report).toMatch(/\b0 fail\b/);
  expect(report).toMatch(/\b(2[5-9]|[3-9]\d) pass\b/);
  expect(run.exitCode).toBe(0);
}, 130_000);
