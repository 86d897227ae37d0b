import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { isActorSpec, listActors, loadMeshFile, MeshFileSchema, parseMeshFile, type MeshFileIssue } from "../../src/supervisor/mesh-file.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { tempDir } from "../helpers.ts";

/** A temp dir holding echo.ts and worker.ts, so module checks pass unless a test says otherwise. */
function meshDir() {
  const dir = tempDir("hm-meshfile-");
  for (const file of ["echo.ts", "worker.ts"]) writeFileSync(join(dir.path, file), "export {};\n");
  return dir;
}

/** Parses and returns the HermesError it must throw. */
function problems(text: string, dir: string): HermesError {
  try {
    parseMeshFile(text, join(dir, "mesh.yaml"));
  } catch (error) {
    if (error instanceof HermesError) return error;
    throw error;
  }
  throw new Error("expected the mesh file to be rejected");
}

const lines = (error: HermesError, dir: string) => error.message.split("\n").map((l) => l.replace(join(dir, "mesh.yaml"), "mesh.yaml"));

const HEAD = "mesh:\n  name: demo\nsupervisor:\n  children:\n";

describe("valid mesh files", () => {
  test("the example actors/mesh.yaml loads: a pool of two echo actors", () => {
    const mesh = loadMeshFile(join(import.meta.dir, "../../actors/mesh.yaml"));
    const [echo] = listActors(mesh);
    expect(echo).toMatchObject({ actor: "echo", pool: 2, capabilities: ["echo"], subscribe: ["demo.#"] });
    expect(echo!.module).toBe(join(import.meta.dir, "../../actors/echo.ts"));
  });

  test("defaults are filled in and paths come back absolute", () => {
    using dir = meshDir();
    const mesh = parseMeshFile(`mesh:\n  name: demo\n  dir: ./run\nsupervisor:\n  children:\n    - actor: echo\n      module: ./echo.ts\n`, join(dir.path, "mesh.yaml"));
    expect(mesh.mesh).toEqual({ name: "demo", dir: join(dir.path, "run"), heartbeat_ms: 1000, events: true, scheduler: "least_loaded", runtime: "bun", transport: "unix" });
    expect(mesh.gateway).toBeUndefined();
    expect(mesh.supervisor).toEqual({
      strategy: "one_for_one", intensity: 1, period_ms: 5000,
      backoff: { initial_ms: 10, max_ms: 1000, jitter: 0.2 },
      children: [{
        actor: "echo", module: join(dir.path, "echo.ts"), pool: 1, external: 0, capabilities: [], subscribe: [],
        restart: "permanent", shutdown_ms: 5000, durable: false, runtime: "bun", deno_permissions: [],
      }],
    });
  });

  test("nested supervisors; listActors walks depth-first in start order", () => {
    using dir = meshDir();
    const text = `mesh: { name: demo-2, token_env: HERMES_TOKEN, heartbeat_ms: 250 }
supervisor:
  strategy: one_for_all
  intensity: 3
  backoff: { max_ms: 50 }
  children:
    - { actor: first, module: echo.ts }
    - supervisor: workers
      strategy: rest_for_one
      intensity: 2
      period_ms: 3000
      children:
        - { actor: w1, module: worker.ts, pool: 4, shutdown_ms: brutal_kill, env: { MODE: fast }, window: 64 }
        - supervisor: inner
          children: [{ actor: deep, module: ./worker.ts, restart: transient, durable: true }]
    - { actor: last, module: echo.ts, capabilities: [ocr.image], subscribe: ["task.*.generate", "#.done"] }
`;
    const mesh = parseMeshFile(text, join(dir.path, "mesh.yaml"));
    expect(listActors(mesh).map((a) => a.actor)).toEqual(["first", "w1", "deep", "last"]);
    expect(mesh.mesh.token_env).toBe("HERMES_TOKEN");
    expect(mesh.supervisor.backoff).toEqual({ initial_ms: 10, max_ms: 50, jitter: 0.2 });
    const workers = mesh.supervisor.children[1]!;
    expect(isActorSpec(workers)).toBe(false);
    expect(workers).toMatchObject({ supervisor: "workers", strategy: "rest_for_one", intensity: 2, period_ms: 3000 });
    expect(listActors(mesh)[1]).toMatchObject({ pool: 4, shutdown_ms: "brutal_kill", env: { MODE: "fast" }, window: 64 });
    expect(listActors(mesh)[2]).toMatchObject({ restart: "transient", durable: true, module: join(dir.path, "worker.ts") });
  });
});

describe("the nats section", () => {
  test("dead_letters_kept: a count of 0 or more, passed to every member's transport; anything else refused where it is", () => {
    using dir = meshDir();
    const nats = (kept: string) => `mesh:\n  name: demo\n  transport: nats\n  nats: { servers: ["nats://127.0.0.1:4222"], dead_letters_kept: ${kept} }\nsupervisor:\n  children:\n    - { actor: echo, module: echo.ts }\n`;
    expect(parseMeshFile(nats("50"), join(dir.path, "mesh.yaml")).mesh.nats?.dead_letters_kept).toBe(50);
    expect(parseMeshFile(nats("0"), join(dir.path, "mesh.yaml")).mesh.nats?.dead_letters_kept).toBe(0);
    expect(lines(problems(nats("-1"), dir.path), dir.path)).toEqual(["mesh.yaml:4:66: mesh.nats.dead_letters_kept: expected an integer from 0 to 1000000000, got -1"]);
    expect(lines(problems(nats("2.5"), dir.path), dir.path)).toHaveLength(1);
  });
});

describe("errors point at file, line and column", () => {
  test("the brief's example: a pool that is not a number", () => {
    using dir = meshDir();
    const text = `${HEAD}    - actor: echo\n      module: echo.ts\n    - actor: other\n      module: echo.ts\n      pool: two\n`;
    const error = problems(text, dir.path);
    expect(error.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(lines(error, dir.path)).toEqual(['mesh.yaml:9:13: supervisor.children[1].pool: expected an integer from 1 to 64, got "two"']);
    expect(error.fields.issues).toEqual([
      { line: 9, col: 13, path: "supervisor.children[1].pool", message: 'expected an integer from 1 to 64, got "two"' },
    ] satisfies MeshFileIssue[]);
  });

  test("every problem is reported, one per line, in file order", () => {
    using dir = meshDir();
    const text = `mesh:
  name: Demo
supervisor:
  strategy: rest_for_two
  children:
    - actor: echo
      module: ./missing.ts
      poool: 3
      pool: 65
      subscribe: ["a..b", "ok.#"]
      shutdown_ms: -1
      env: { "1X": a, Y: 3 }
    - supervisor: echo
      children:
        - { module: x.ts }
        - supervisor: nested
    - actor: Bad
`;
    expect(lines(problems(text, dir.path), dir.path)).toEqual([
      'mesh.yaml:2:9: mesh.name: expected a mesh name matching [a-z0-9-]+, got "Demo"',
      'mesh.yaml:4:13: supervisor.strategy: expected one of one_for_one, one_for_all, rest_for_one, got "rest_for_two"',
      `mesh.yaml:7:15: supervisor.children[0].module: module not found: ${join(dir.path, "missing.ts")}`,
      "mesh.yaml:8:7: supervisor.children[0].poool: unknown key (expected one of: actor, module, pool, external, capabilities, subscribe, restart, shutdown_ms, concurrency, durable, runtime, deno_permissions, window, env)",
      "mesh.yaml:9:13: supervisor.children[0].pool: expected an integer from 1 to 64, got 65",
      'mesh.yaml:10:19: supervisor.children[0].subscribe[0]: invalid pattern "a..b": segment 2 is empty',
      'mesh.yaml:11:20: supervisor.children[0].shutdown_ms: expected (milliseconds, an integer from 0) or "brutal_kill", got -1',
      'mesh.yaml:12:14: supervisor.children[0].env["1X"]: expected an environment variable name, got "1X"',
      "mesh.yaml:12:26: supervisor.children[0].env.Y: expected a string (quote numbers and booleans), got 3",
      'mesh.yaml:13:19: supervisor.children[1].supervisor: duplicate name "echo" (first declared at line 6, column 14)',
      "mesh.yaml:15:11: supervisor.children[1].children[0]: a child needs an `actor` or a `supervisor` key",
      "mesh.yaml:16:11: supervisor.children[1].children[1].children: missing required key (expected a list)",
      "mesh.yaml:17:7: supervisor.children[2].module: missing required key (expected a module path)",
      'mesh.yaml:17:14: supervisor.children[2].actor: expected a name matching [a-z][a-z0-9_-]*, got "Bad"',
    ]);
  });

  test("missing top-level sections point at the document", () => {
    using dir = meshDir();
    expect(lines(problems("mesh:\n  name: demo\n", dir.path), dir.path)).toEqual([
      "mesh.yaml:1:1: supervisor: missing required key (expected a map)",
    ]);
    expect(lines(problems("", dir.path), dir.path)).toEqual(["mesh.yaml:1:1: (top level): expected a map, got an empty value"]);
    expect(lines(problems("- a\n", dir.path), dir.path)).toEqual(["mesh.yaml:1:1: (top level): expected a map, got a list"]);
  });

  test("YAML syntax errors carry line and column", () => {
    using dir = meshDir();
    expect(lines(problems("mesh:\n  name: demo\n  name: again\n", dir.path), dir.path)).toEqual(["mesh.yaml:3:3: invalid YAML: Map keys must be unique"]);
    const flow = lines(problems("mesh: { name: demo\nsupervisor: {}\n", dir.path), dir.path);
    expect(flow.length).toBeGreaterThan(0);
    expect(flow.every((l) => /^mesh\.yaml:\d+:\d+: invalid YAML: /.test(l))).toBe(true);
    expect(lines(problems(`${HEAD}    []\n---\nx: 1\n`, dir.path), dir.path)).toEqual(["mesh.yaml:6:1: invalid YAML: a mesh file holds one YAML document"]);
  });

  test("an empty value is reported as such, at the key's line", () => {
    using dir = meshDir();
    const error = problems(`${HEAD}    - actor: echo\n      module: echo.ts\n      pool:\n`, dir.path);
    expect(lines(error, dir.path)[0]).toMatch(/^mesh\.yaml:7:\d+: supervisor\.children\[0\]\.pool: expected an integer from 1 to 64, got an empty value$/);
  });

  test("mesh.socket_group: a name is looked up in /etc/group, an unknown one fails where it is written", () => {
    using dir = meshDir();
    const file = (group: string) => `mesh:\n  name: demo\n  socket_group: ${group}\nsupervisor:\n  children: []\n`;
    // Groups every Debian system has; a gid (number or digits) is taken as it is.
    expect(parseMeshFile(file("root"), join(dir.path, "mesh.yaml")).mesh.socket_group).toBe(0);
    expect(parseMeshFile(file("4242"), join(dir.path, "mesh.yaml")).mesh.socket_group).toBe(4242);
    expect(parseMeshFile(file('"4242"'), join(dir.path, "mesh.yaml")).mesh.socket_group).toBe(4242);
    expect(lines(problems(file("hm-no-such-group"), dir.path), dir.path)).toEqual([
      'mesh.yaml:3:17: mesh.socket_group: no group named "hm-no-such-group" in /etc/group (give a group from elsewhere, such as LDAP, by its numeric gid)',
    ]);
    expect(lines(problems(file("[staff]"), dir.path), dir.path)).toEqual([
      'mesh.yaml:3:17: mesh.socket_group: expected a group name or a numeric gid, got a list',
    ]);
  });

  test("backoff max_ms below initial_ms is refused", () => {
    using dir = meshDir();
    const error = problems("mesh: { name: d }\nsupervisor:\n  backoff: { initial_ms: 100, max_ms: 5 }\n  children: []\n", dir.path);
    expect(lines(error, dir.path)).toEqual(["mesh.yaml:3:39: supervisor.backoff.max_ms: max_ms must not be below initial_ms"]);
  });

  test("hung_after_ms below twice heartbeat_ms is refused; at twice it loads", () => {
    using dir = meshDir();
    const error = problems("mesh: { name: d, heartbeat_ms: 1000, hung_after_ms: 1500 }\nsupervisor:\n  children: []\n", dir.path);
    expect(lines(error, dir.path)).toEqual(["mesh.yaml:1:53: mesh.hung_after_ms: hung_after_ms must be at least twice heartbeat_ms: one late heartbeat is not a hang"]);
    const mesh = parseMeshFile("mesh: { name: d, heartbeat_ms: 1000, hung_after_ms: 2000 }\nsupervisor:\n  children: []\n", join(dir.path, "mesh.yaml"));
    expect(mesh.mesh.hung_after_ms).toBe(2000);
  });

  test("a module that is a directory is not a module", () => {
    using dir = meshDir();
    const error = problems(`${HEAD}    - { actor: a, module: . }\n`, dir.path);
    expect(error.message).toContain(`supervisor.children[0].module: module not found: ${dir.path}`);
  });

  test("loadMeshFile names the file it cannot read", () => {
    using dir = meshDir();
    const path = join(dir.path, "absent.yaml");
    let error: HermesError | undefined;
    try {
      loadMeshFile(path);
    } catch (e) {
      error = e as HermesError;
    }
    expect(error).toBeInstanceOf(HermesError);
    expect(error!.code).toBe(ErrorCode.INVALID_REQUEST);
    expect(error!.message).toBe(`${path}: cannot read the mesh file (ENOENT)`);
  });
});

describe("MeshFileSchema", () => {
  test("a JSON Schema can be derived from it, recursion included", () => {
    const schema = z.toJSONSchema(MeshFileSchema, { io: "input" }) as unknown as {
      required: string[];
      properties: { supervisor: { properties: { children: { items: { $ref: string } } } } };
      $defs: Record<string, { anyOf: unknown[] }>;
    };
    expect(schema.required.sort()).toEqual(["mesh", "supervisor"]);
    // Children are a named definition because they recur inside nested supervisors.
    const ref = schema.properties.supervisor.properties.children.items.$ref.replace("#/$defs/", "");
    expect(schema.$defs[ref]!.anyOf).toHaveLength(2);
  });
});
