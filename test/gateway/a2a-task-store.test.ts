/** The gateway's stored A2A tasks (src/gateway/a2a-task-store.ts): they outlive the process, and stay bounded. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Role, Task, TaskState, type Message } from "@a2a-js/sdk";
import { SqliteTaskStore } from "../../src/gateway/a2a-task-store.ts";
import { tempDir } from "../helpers.ts";

const message = (id: string, text: string): Message => ({ messageId: id, contextId: "c", taskId: "", role: Role.ROLE_AGENT, parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }], metadata: undefined, extensions: [], referenceTaskIds: [] });

function task(id: string, state: TaskState, at: number, extra: Partial<Task> = {}): Task {
  return { id, contextId: extra.contextId ?? "c", status: { state, message: undefined, timestamp: new Date(at).toISOString() }, artifacts: [], history: [], metadata: { hermes: { skill: "echo" } }, ...extra };
}

const list = (store: SqliteTaskStore, more: Partial<Parameters<SqliteTaskStore["list"]>[0]> = {}) =>
  store.list({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", statusTimestampAfter: undefined, ...more });

describe("SqliteTaskStore", () => {
  test("a task saved is there after the store is closed and opened again, parts and all", async () => {
    using dir = tempDir();
    const path = join(dir.path, "data", "a2a-tasks.db");
    const first = SqliteTaskStore.open(path);
    const saved = task("t1", TaskState.TASK_STATE_COMPLETED, 1000, { history: [message("m1", "2+2")] });
    await first.save(saved);
    first.close();
    const again = SqliteTaskStore.open(path);
    expect(await again.load("t1")).toEqual(saved);
    expect(await again.load("nope")).toBeUndefined();
    again.close();
  });

  test("a task's history keeps its first message and the latest ones", async () => {
    const store = SqliteTaskStore.open(":memory:", { maxHistory: 4 });
    const history = Array.from({ length: 10 }, (_, i) => message(`m${i}`, `step ${i}`));
    await store.save(task("t", TaskState.TASK_STATE_WORKING, 1, { history }));
    expect((await store.load("t"))!.history.map((m) => m.messageId)).toEqual(["m0", "m7", "m8", "m9"]);
    store.close();
  });

  test("a task's bytes are bounded: the latest messages within maxHistoryBytes, a message past maxMessageBytes without its parts; the artifact whole", async () => {
    const store = SqliteTaskStore.open(":memory:", { maxHistoryBytes: 25_000, maxMessageBytes: 20_000 });
    // Nine progress messages of 10 kB, then a status of 100 kB: far under maxHistory, far over the bytes.
    const history = [message("m0", "2+2"), ...Array.from({ length: 9 }, (_, i) => message(`m${i + 1}`, "p".repeat(10_000)))];
    const big = message("last", "s".repeat(100_000));
    const answer = { artifactId: "answer", name: "answer", description: "", parts: [{ content: { $case: "text" as const, value: "a".repeat(300_000) }, metadata: undefined, filename: "", mediaType: "" }], metadata: undefined, extensions: [] };
    await store.save(task("t", TaskState.TASK_STATE_WORKING, 1, { history: [...history, big], status: { state: TaskState.TASK_STATE_WORKING, message: big, timestamp: new Date(1).toISOString() }, artifacts: [answer] }));
    const kept = (await store.load("t"))!;
    expect(kept.history.map((m) => m.messageId)).toEqual(["m0", "m8", "m9", "last"]);
    const note = /^\(1000\d\d bytes of this message were not kept: the task store keeps at most 20000 per message/;
    for (const stub of [kept.history.at(-1)!, kept.status!.message!]) {
      expect(stub).toMatchObject({ messageId: "last", contextId: "c" });
      expect(stub.parts).toHaveLength(1);
      expect(stub.parts[0]!.content).toEqual({ $case: "text", value: expect.stringMatching(note) });
    }
    expect(kept.artifacts).toEqual([answer]);
    expect(JSON.stringify(Task.toJSON(kept)).length).toBeLessThan(300_000 + 30_000);
    store.close();
  });

  test("past maxTasks the oldest finished tasks go first; running ones stay", async () => {
    const store = SqliteTaskStore.open(":memory:", { maxTasks: 10 });
    await store.save(task("running-oldest", TaskState.TASK_STATE_WORKING, 0));
    for (let i = 1; i < 64; i++) await store.save(task(`done-${i}`, TaskState.TASK_STATE_COMPLETED, i));
    expect(store.size).toBe(10);
    expect(await store.load("running-oldest")).toBeDefined();
    expect(await store.load("done-63")).toBeDefined();
    expect(await store.load("done-1")).toBeUndefined();
    store.close();
  });

  test("ListTasks: newest first, filtered by context and state, a page at a time", async () => {
    const store = SqliteTaskStore.open(":memory:");
    for (let i = 0; i < 5; i++) await store.save(task(`a${i}`, i % 2 ? TaskState.TASK_STATE_FAILED : TaskState.TASK_STATE_COMPLETED, 100 + i, { contextId: "A", artifacts: [{ artifactId: "x", name: "", description: "", parts: [], metadata: undefined, extensions: [] }] }));
    await store.save(task("b0", TaskState.TASK_STATE_COMPLETED, 500, { contextId: "B" }));
    const first = await list(store, { contextId: "A", pageSize: 2 });
    expect(first.tasks.map((t) => t.id)).toEqual(["a4", "a3"]);
    expect(first.totalSize).toBe(5);
    expect(first.tasks[0]!.artifacts).toEqual([]);
    const second = await list(store, { contextId: "A", pageSize: 2, pageToken: first.nextPageToken });
    expect(second.tasks.map((t) => t.id)).toEqual(["a2", "a1"]);
    const last = await list(store, { contextId: "A", pageSize: 2, pageToken: second.nextPageToken });
    expect(last.tasks.map((t) => t.id)).toEqual(["a0"]);
    expect(last.nextPageToken).toBe("");
    expect((await list(store, { status: TaskState.TASK_STATE_FAILED })).tasks.map((t) => t.id)).toEqual(["a3", "a1"]);
    expect((await list(store, { includeArtifacts: true, contextId: "A", pageSize: 1 })).tasks[0]!.artifacts).toHaveLength(1);
    await expect(list(store, { pageToken: "garbage" })).rejects.toThrow("pageToken");
    // statusTimestampAfter is "greater than or equal": a2 was updated at that very millisecond.
    expect((await list(store, { contextId: "A", statusTimestampAfter: new Date(102).toISOString() })).tasks.map((t) => t.id)).toEqual(["a4", "a3", "a2"]);
    expect(store.interrupted()).toEqual([]);
    await store.save(task("w", TaskState.TASK_STATE_WORKING, 1));
    expect(store.interrupted().map((t) => t.id)).toEqual(["w"]);
    store.close();
  });
});
