/** `hermes-mesh run`, `runs` and `trace` as a user types them, against a real mesh with the orchestrator. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir, waitFor } from "../helpers.ts";
import type { TestMesh } from "../actor/mesh-harness.ts";
import { SEED_FILE, startWorkflowMesh, stats } from "./workflow-harness.ts";

const CLI = join(import.meta.dir, "../../src/cli/main.ts");
const MESH_FILE = join(import.meta.dir, "../../actors/mesh.yaml");
const DESIGN_FILE = join(import.meta.dir, "../../actors/workflows/image_with_caption.yaml");

/** Runs the command in its own process (asynchronously: the mesh under test lives in this one). */
async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, out, err };
}

describe("hermes-mesh run / runs", () => {
  let t: TestMesh;
  const files = tempDir("hm-wf-cli-");
  beforeAll(async () => {
    t = await startWorkflowMesh("wf-cli");
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
    files[Symbol.dispose]();
  });

  test("run streams the run node by node and prints its output; runs lists it; trace shows it as a tree", async () => {
    const run = await cli("run", SEED_FILE, '{"prompt":"an owl on a fence","delay_ms":10}', "--dir", t.dir);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.out)).toMatchObject({ caption: "An owl on a fence.", rounds: 2 });
    const runId = /^run (\w{26}): image-caption v1, trace (\w+)/m.exec(run.err)?.[1];
    expect(runId).toBeDefined();
    expect(run.err).toMatch(/^ {2}\+\d+\.\d\d s {2}image {14}succeeded$/m);
    expect(run.err).toMatch(/validate {11}sends back → caption \(round 2\)/);
    expect(run.err).toMatch(/caption {12}succeeded {2}round 2/);
    expect(run.err).toContain(`run ${runId} succeeded`);

    const list = await cli("runs", "--dir", t.dir);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${runId}\\s+image-caption v1\\s+succeeded\\s+3/4\\s`, "m"));
    const one = await cli("runs", runId!, "--dir", t.dir);
    expect(one.code).toBe(0);
    expect(one.out).toMatch(/^caption\s+succeeded\s+1\s+2\s+2\s*$/m);
    expect(one.out).toContain("validate  pending round 2");

    // The CLI's trace_id is the run request's id; event logs are flushed 200 ms after a batch's first line.
    let trace = await cli("trace", runId!, "--dir", t.dir);
    // Each member flushes on its own tick: wait for the orchestrator's own span of the run as well.
    const complete = (out: string) => out.includes("round 2 (succeeded)") && /└─ orchestrator {2}request/.test(out);
    await waitFor(async () => complete((trace = await cli("trace", runId!, "--dir", t.dir)).out), "the run's spans in the event logs");
    expect(trace.code).toBe(0);
    expect(trace.out).toMatch(/└─ orchestrator {2}request/);
    expect(trace.out).toMatch(/├─ orchestrator {2}node image → capability:image_generation \(succeeded\)/);
    expect(trace.out).toMatch(/│ {2}└─ image-gen {2}request/);
    expect(trace.out).toContain("node caption → capability:caption_generation round 2 (succeeded)");
  });

  test("the seed design's own workflow runs as written: no input mappings, text_generation, version 1.0", async () => {
    const run = await cli("run", DESIGN_FILE, '{"prompt":"a red fox in the snow"}', "--dir", t.dir);
    expect(run.code).toBe(0);
    expect(run.err).toMatch(/^run \w{26}: image_caption_workflow v1\.0, trace /m);
    expect(run.err).toMatch(/^run \w{26} succeeded$/m);
    // No output mapping: every node's answer by id. The validator found the image and the
    // caption in the upstream results of its default payload, and passed them.
    expect(JSON.parse(run.out)).toMatchObject({
      generate_image: { image: expect.stringMatching(/^image:\/\/a-red-fox-in-the-snow-[0-9a-f]{10}\.png$/) },
      generate_caption: { caption: expect.stringContaining("a red fox in the snow") },
      validate_result: { valid: true, failed: [], reasons: {} },
    });
    // And the demo mesh file provides every capability it asks for.
    const ok = await cli("run", "--validate", DESIGN_FILE, "--mesh", MESH_FILE);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain(`ok: image_caption_workflow v1.0, 3 nodes (generate_image, generate_caption, validate_result), all provided by ${MESH_FILE}`);
  });

  test("run --detach answers at once with the run id; run --cancel cancels it (its running nodes hear of it)", async () => {
    const client = await t.client();
    const before = await stats(client, "image-gen");
    const detached = await cli("run", SEED_FILE, '{"prompt":"a slow glacier","delay_ms":20000}', "--detach", "--dir", t.dir);
    expect(detached.code).toBe(0);
    const { run_id, status } = JSON.parse(detached.out);
    expect(status).toBe("running");
    const cancel = await cli("run", "--cancel", run_id, "--dir", t.dir);
    expect(cancel.code).toBe(0);
    expect(JSON.parse(cancel.out)).toMatchObject({ run_id, status: "cancelled", nodes: { image: { status: "cancelled" }, caption: { status: "cancelled" } } });
    await waitFor(async () => (await stats(client, "image-gen")).cancelled === before.cancelled + 1, "the image node to hear of the cancel");
    const unknown = await cli("run", "--cancel", "01NOPE0000000000000000000X", "--dir", t.dir);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("no run 01NOPE0000000000000000000X in this mesh");
  });

  test("Ctrl-C during a run cancels it: the command ends with the cancelled run (exit 1)", async () => {
    const proc = Bun.spawn([process.execPath, CLI, "run", SEED_FILE, '{"prompt":"an endless road","delay_ms":20000}', "--dir", t.dir], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    let err = "";
    const reading = (async () => {
      for await (const chunk of proc.stderr) err += new TextDecoder().decode(chunk);
    })();
    try {
      await waitFor(() => /caption +· /.test(err), "the run to be working");
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(1);
      await reading;
      expect(err).toMatch(/cancelling run \w{26} \.\.\./);
      expect(err).toMatch(/error 3 TASK_TIMEOUT: run \w{26} cancelled: cancelled from the command line \(Ctrl-C\)/);
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    }
  });

  test("a bad workflow file is refused before anything is sent, every problem with its line (exit 2)", async () => {
    const bad = join(files.path, "bad.yaml");
    writeFileSync(bad, "name: bad\nversion: 1\nnodes:\n  - { id: a, capability: echo }\n  - { id: b, capability: echo }\nedges:\n  - { from: a, to: b }\n  - { from: b, to: a }\n");
    const run = await cli("run", bad, "{}", "--dir", join(files.path, "no-mesh-here"));
    expect(run.code).toBe(2);
    expect(run.err.trim()).toBe(`${bad}:8:5: node "a": edges[1]: cycle: a → b → a (a workflow is a DAG; use send_back on a node to send work back)`);
  });

  test("run --validate checks a file offline, and with --mesh that every capability is provided", async () => {
    const ok = await cli("run", "--validate", SEED_FILE, "--mesh", MESH_FILE);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain(`ok: image-caption v1, 4 nodes (image, placeholder_image, caption, validate), all provided by ${MESH_FILE}`);
    const lacking = join(files.path, "lacking.yaml");
    writeFileSync(lacking, "name: lacking\nversion: 1\nnodes:\n  - id: speak\n    capability: text_to_speech\n");
    const bad = await cli("run", "--validate", lacking, "--mesh", MESH_FILE);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(new RegExp(`^${lacking.replace(/[.]/g, "\\.")}:5:17: node "speak": nodes\\[0\\]\\.capability: capability "text_to_speech" is provided by no actor in `));
  });
});
