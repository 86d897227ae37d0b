/**
 * The transport conformance suite with Deno receivers: test/mesh/transport.test.ts again, in a
 * `bun test` process of its own with HERMES_TEST_RECEIVER_RUNTIME=deno, so that every receiver
 * it spawns (test/mesh/echo-server-fixture.ts, on node:net sockets under Deno) is a Deno
 * process, over Unix sockets and TCP. The senders stay on Bun. No case is skipped for Deno.
 */
import { expect, test } from "bun:test";
import { denoBinary, runTransportSuite } from "../helpers.ts";

test("the transport conformance suite passes against Deno receivers, Unix and TCP", () => {
  // Fails here, saying to run npm install, rather than in every receiver the child spawns.
  const deno = denoBinary();
  const run = runTransportSuite({ HERMES_TEST_RECEIVER_RUNTIME: "deno", HERMES_DENO: deno });
  const report = run.report;
  expect(report).toMatch(/\b0 fail\b/);
  expect(report).toMatch(/\b(2[5-9]|[3-9]\d) pass\b/);
  // Nothing quietly left out (a skipped or todo case would be counted apart from pass).
  expect(report).not.toMatch(/\b\d+ (skip|todo)\b/);
  expect(run.exitCode).toBe(0);
}, 130_000);
