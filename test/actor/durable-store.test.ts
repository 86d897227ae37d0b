/** The durable store on a full disk: a refused commit writes nothing, throws code 6, and the store commits again once there is space. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { DurableStore } from "../../src/actor/durable-store.ts";
import { createLogger } from "../../mesh/logger.ts";
import { createErrorReply, createReply, createRequest, MessageType } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { diskKinds, injectInto, openDisk, type FullableDisk } from "../disk-full.ts";
import { MsgpackExt, MsgpackTimestamp } from "../../mesh/msgpack-values.ts";
import { tempDir } from "../helpers.ts";

/** A store on `disk` whose warnings are kept. */
function openStore(disk: FullableDisk, name = "ledger.db") {
  const warnings: Array<Record<string, unknown>> = [];
  using _ = injectInto(disk);
  const store = DurableStore.open(join(disk.dir, name), { log: createLogger({}, (line) => warnings.push(JSON.parse(line))) });
  return { store, warnings };
}

const request = (n: number) => createRequest("client", { target_agent: "ledger" }, { n });
const answerTo = (req: ReturnType<typeof request>) => createReply(MessageType.RESPONSE, req, "ledger", { ok: true });
/** Writes big enough that a tmpfs with no page left cannot take them in the WAL's last page. */
const effects = (key: string) => ({ writes: new Map<string, unknown>([[key, "v".repeat(6000)]]), outbox: [] });

for (const { kind, skip } of diskKinds()) {
  describe.skipIf(skip !== undefined)(`DurableStore on a full disk (${kind}${skip ? `; skipped: ${skip}` : ""})`, () => {
    test("a refused commit throws code 6 with resource disk, writes nothing, and the same message commits once there is space", () => {
      using disk = openDisk(kind);
      const { store, warnings } = openStore(disk);
      const first = request(1);
      store.begin(first.message_id);
      store.commit(first.message_id, effects("a"), answerTo(first));
      store.complete(first.message_id, answerTo(first));

      disk.fill();
      const refused = request(2);
      store.begin(refused.message_id);
      let error: unknown;
      try {
        store.commit(refused.message_id, effects("b"), answerTo(refused));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(HermesError);
      const hermes = error as HermesError;
      expect(hermes.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
      expect(hermes.fields).toMatchObject({ resource: "disk", sqlite_code: "SQLITE_FULL" });
      expect(hermes.toPayload().detail).toContain("ledger.db cannot commit: database or disk is full");
      expect(store.get("b")).toBeUndefined();
      // The code-6 answer that goes out is recorded nowhere: the message is not handled.
      store.complete(refused.message_id, createErrorReply(refused, "ledger", hermes));
      expect(store.lookup(refused.message_id)).toBeUndefined();
      expect(warnings.map((w) => w.msg)).toEqual(["durable store cannot commit: calls are refused (code 6 on a full disk) and recorded nowhere until it can"]);

      disk.free();
      store.begin(refused.message_id);
      store.commit(refused.message_id, effects("b"), answerTo(refused));
      store.complete(refused.message_id, answerTo(refused));
      expect(store.lookup(refused.message_id)?.state).toBe("done");
      expect(warnings.at(-1)).toMatchObject({ msg: "durable store commits again", refused: 1 });
      store.close();

      const reopened = openStore(disk).store;
      expect(reopened.keys()).toEqual(["a", "b"]);
      expect(reopened.lookup(first.message_id)?.answer?.payload).toEqual({ ok: true });
      expect(reopened.lookup(refused.message_id)?.answer?.correlation_id).toBe(refused.message_id);
      reopened.close();
    });

    test("an error answer alone is sent even when it cannot be recorded; an event's effects that cannot be are refused with code 6", () => {
      using disk = openDisk(kind);
      const { store } = openStore(disk);
      store.set("warm", "v".repeat(6000));
      disk.fill();
      const failed = request(3);
      store.begin(failed.message_id);
      const errorAnswer = createErrorReply(failed, "ledger", new HermesError(ErrorCode.INTERNAL, "handler threw"));
      store.complete(failed.message_id, errorAnswer);
      expect(store.lookup(failed.message_id)).toMatchObject({ state: "done", answer: errorAnswer });

      store.begin("event-1");
      store.stage("event-1", effects("from-event"));
      expect(() => store.complete("event-1")).toThrow(expect.objectContaining({ code: ErrorCode.RESOURCE_EXHAUSTED, fields: expect.objectContaining({ resource: "disk" }) }));
      expect(store.lookup("event-1")).toBeUndefined();
      expect(store.get("from-event")).toBeUndefined();
      expect(() => store.set("direct", "v".repeat(6000))).toThrow(expect.objectContaining({ code: ErrorCode.RESOURCE_EXHAUSTED }));
      expect(store.get("direct")).toBeUndefined();
      disk.free();
      store.close();
    });

    test("outbox rows acknowledged while the disk is full are deleted once it is not", async () => {
      using disk = openDisk(kind);
      const { store } = openStore(disk);
      const req = request(4);
      const sent = createRequest("ledger", { target_agent: "other" }, { pad: "p".repeat(6000) });
      store.begin(req.message_id);
      store.commit(req.message_id, { writes: new Map(), outbox: [{ destination: "other", envelope: sent }] }, answerTo(req));
      store.complete(req.message_id, answerTo(req));
      expect(store.pendingOutbox()).toHaveLength(1);
      disk.fill();
      store.delivered(sent.message_id, "other");
      await Promise.resolve(); // the batched delete runs in a microtask: it must not throw there
      expect(store.pendingOutbox()).toHaveLength(1);
      disk.free();
      store.close();
      const reopened = openStore(disk).store;
      expect(reopened.pendingOutbox()).toEqual([]);
      reopened.close();
    });
  });
}

test("an answer the mesh replaced on its way out (it could not be sent) replaces the committed one in the record", () => {
  using disk = openDisk("injected");
  const { store } = openStore(disk);
  const req = request(5);
  store.begin(req.message_id);
  store.commit(req.message_id, effects("k"), answerTo(req));
  const replaced = createErrorReply(req, "ledger", new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "the answer could not be sent: too big", { resource: "frame_bytes" }));
  store.complete(req.message_id, replaced);
  store.close();
  const reopened = openStore(disk).store;
  expect(reopened.lookup(req.message_id)?.answer).toMatchObject({ message_type: MessageType.ERROR, message_id: replaced.message_id });
  expect(reopened.get("k")).toBe("v".repeat(6000));
  reopened.close();
});

describe("DurableStore keeps payload values exactly", () => {
  test("a stored answer and outbox envelope come back with timestamps' nanoseconds, ext types and big integers intact", () => {
    using dir = tempDir();
    const path = join(dir.path, "exact.db");
    const store = DurableStore.open(path, { log: createLogger({}, () => {}) });
    const req = request(1);
    const values = { at: new MsgpackTimestamp(1514862245, 678901234), ext: new MsgpackExt(1, new Uint8Array([0x10])), big: 2n ** 60n + 1n };
    const answer = createReply(MessageType.RESPONSE, req, "ledger", values);
    const event = createRequest("ledger", { target_agent: "audit" }, values);
    store.begin(req.message_id);
    store.commit(req.message_id, { writes: new Map(), outbox: [{ destination: "audit", envelope: event }] }, answer);
    store.close();
    const reopened = DurableStore.open(path, { log: createLogger({}, () => {}) });
    try {
      const kept = reopened.lookup(req.message_id)?.answer?.payload as typeof values;
      expect(kept.at).toBeInstanceOf(MsgpackTimestamp);
      expect([kept.at.seconds, kept.at.nanoseconds]).toEqual([1514862245, 678901234]);
      expect(kept.ext).toBeInstanceOf(MsgpackExt);
      expect([kept.ext.type, [...kept.ext.data]]).toEqual([1, [0x10]]);
      expect(kept.big).toBe(2n ** 60n + 1n);
      const [pending] = reopened.pendingOutbox();
      expect((pending!.envelope.payload as typeof values).at.nanoseconds).toBe(678901234);
    } finally {
      reopened.close();
    }
  });
});
