/**
 * The hand-written checks a member runs on what it receives (isValidHello, parseRegistryUpdate's
 * own rules) agree with the zod schemas they stand in for, and zod is loaded only when a schema
 * is used: never for what is valid, at once for a refusal that needs explaining.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { EnvelopeSchema, loadZod, PayloadSchema } from "../../mesh/envelope.ts";
import { ControlFrameSchema, HelloSchema, isValidHello } from "../../mesh/handshake.ts";
import { parseRegistryUpdate, RegistryUpdateSchema, type RegistryEntry } from "../../mesh/registry.ts";
import { HermesError } from "../../mesh/errors.ts";
import { isValidMetaForm, MetaFormSchema } from "../../src/gateway/invoke-forms.ts";
import { seededRandom, type SeededRandom } from "../conformance/seeded-random.ts";
import { BUN } from "../helpers.ts";

const HELLO = { message_type: "hello", protocol: 1, node: "echo#1", codecs: ["msgpackr-records", "msgpack"], window: 4096 };
const ENTRY: RegistryEntry = {
  name: "echo", instance: 1, address: "echo#1", id: "id-echo-1", socket: "/run/echo.1.sock",
  capabilities: ["echo"], subscriptions: ["demo.#"], health: "healthy", pid: 4242, restarts: 0, queueDepth: 0, inFlight: 0, updatedAt: 1_700_000_000_000,
};
const UPDATES: unknown[] = [
  { type: "snapshot", entries: [ENTRY, { ...ENTRY, instance: 0, address: "echo#0", kind: "actor", durable: false }] },
  { type: "snapshot", entries: [] },
  { type: "upsert", entry: ENTRY },
  { type: "upsert", entry: { ...ENTRY, address: "cli-1", kind: "client", pid: undefined } },
  { type: "patch", address: "echo#1", changes: { queueDepth: 3, inFlight: 1, updatedAt: 5 } },
  { type: "patch", address: "echo#1", changes: { health: "down", pid: 7 } },
  { type: "patch", address: "echo#1", changes: { durable: true } },
  { type: "patch", address: "echo#1", changes: { capabilityInfo: { echo: { description: "echoes", inputSchema: { type: "object", properties: { a: { type: "string" } } } }, other: {} } } },
  { type: "patch", address: "echo#1", changes: {} },
  { type: "remove", address: "echo#1" },
];

/** Values that sit on either side of some rule: types, bounds, integers, strings, holes. */
const ODD_VALUES: unknown[] = [
  undefined, null, true, 0, -0, 1, -1, 1.5, 5, 256, 257, 3600, 3600.5, 1_000_000, 1_000_001, 3_600_000, 3_600_001, 2 ** 53, -(2 ** 53), NaN, Infinity, -Infinity,
  "", "x", "1.2", "msgpack", "healthy", "sleepy", "client", "a".repeat(256), "a".repeat(257),
  [], ["msgpack"], ["x"], [1], ["msgpack", 2], Array(33).fill("msgpack"), Array(32).fill("msgpack"), [, "msgpack"],
  {}, { a: "b" }, new Date(0), new Uint8Array(2),
];

/** A copy of `value` with one thing changed somewhere inside: a field set, removed or added. */
function mutate(value: unknown, random: SeededRandom): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const containers: Record<string, unknown>[] = [];
  const walk = (node: unknown) => {
    if (typeof node !== "object" || node === null || ArrayBuffer.isView(node) || node instanceof Date) return;
    containers.push(node as Record<string, unknown>);
    for (const child of Object.values(node)) walk(child);
  };
  walk(copy);
  const times = 1 + random.int(2);
  for (let i = 0; i < times; i++) {
    const target = random.pick(containers);
    const keys = Object.keys(target);
    const roll = random.int(10);
    if (roll < 6 && keys.length > 0) target[random.pick(keys)] = random.pick(ODD_VALUES);
    else if (roll < 8 && keys.length > 0) delete target[random.pick(keys)];
    else target[random.pick(["x_extra", "address", "kind", "durable", "pid", "token", "max_frame_bytes", "ack_delay_ms", "type", "meta", "payload", "ttl"])] = random.pick(ODD_VALUES);
  }
  return random.int(20) === 0 ? random.pick(ODD_VALUES) : copy;
}

/**
 * A hand-written check and the schema it stands in for give the same verdict on 5,000 random
 * mutations of `seeds`, enough of them valid and invalid for the agreement to mean something.
 */
function expectAgreement(check: (value: unknown) => boolean, schema: { safeParse(value: unknown): { success: boolean } }, seeds: unknown[], seed: number): void {
  const random = seededRandom(seed);
  const verdicts = { valid: 0, invalid: 0 };
  for (let i = 0; i < 5000; i++) {
    const value = mutate(random.pick(seeds), random);
    const fast = check(value);
    const zod = schema.safeParse(value).success;
    if (fast !== zod) throw new Error(`mutation ${i}: the check says ${fast}, the schema says ${zod}: ${Bun.inspect(value)}`);
    verdicts[fast ? "valid" : "invalid"]++;
  }
  expect(verdicts.valid).toBeGreaterThan(300);
  expect(verdicts.invalid).toBeGreaterThan(1000);
}

describe("isValidHello agrees with HelloSchema", () => {
  test("on the hello a connection sends, and its optional fields", () => {
    for (const hello of [HELLO, { ...HELLO, token: "t", max_frame_bytes: 1 << 20, x_future: 1 }, { ...HELLO, ack_delay_ms: 0 }, { ...HELLO, ack_delay_ms: 3_600_000 }, { ...HELLO, protocol: 2 }]) {
      expect(isValidHello(hello)).toBe(true);
      expect(HelloSchema.safeParse(hello).success).toBe(true);
    }
  });

  test("on 5,000 randomly broken hellos", () => {
    expectAgreement(isValidHello, HelloSchema, [HELLO, { ...HELLO, ack_delay_ms: 30_000 }], 0x4e110);
  });
});

describe("parseRegistryUpdate agrees with RegistryUpdateSchema", () => {
  /** parseRegistryUpdate's answer against the schema's: the same value, or the same error text. */
  const agree = (value: unknown, label: string): boolean => {
    const zod = RegistryUpdateSchema.safeParse(value);
    let parsed: unknown;
    let error: unknown;
    try {
      parsed = parseRegistryUpdate(value);
    } catch (e) {
      error = e;
    }
    if (zod.success) {
      if (error !== undefined) throw new Error(`${label}: the schema accepts, parseRegistryUpdate throws ${error}: ${Bun.inspect(value)}`);
      expect(parsed, label).toEqual(zod.data);
      return true;
    }
    if (!(error instanceof HermesError)) throw new Error(`${label}: the schema refuses, parseRegistryUpdate returns ${Bun.inspect(parsed)}`);
    const reason = zod.error.issues.map((i) => `${i.path.join(".") || "update"}: ${i.message}`).join("; ");
    expect(error.message, label).toBe(`malformed registry update: ${reason}`);
    return false;
  };

  test("an update as the supervisor sends it comes back as it is, not a copy", () => {
    for (const update of UPDATES) {
      expect(parseRegistryUpdate(update)).toBe(update as never);
      expect(agree(update, Bun.inspect(update))).toBe(true);
    }
  });

  test("fields the schema does not name are stripped, as before", () => {
    const update = { type: "patch", address: "echo#1", changes: { inFlight: 2, address: "other", x: 1 }, x_future: true };
    expect(parseRegistryUpdate(update)).toEqual({ type: "patch", address: "echo#1", changes: { inFlight: 2 } });
  });

  test("on 5,000 randomly broken updates", () => {
    const random = seededRandom(0x12e9);
    const verdicts = { valid: 0, invalid: 0 };
    for (let i = 0; i < 5000; i++) {
      const update = mutate(random.pick(UPDATES), random);
      verdicts[agree(update, `mutation ${i}: ${Bun.inspect(update)}`) ? "valid" : "invalid"]++;
    }
    expect(verdicts.valid).toBeGreaterThan(300);
    expect(verdicts.invalid).toBeGreaterThan(1000);
  });
});

describe("isValidMetaForm agrees with MetaFormSchema", () => {
  const SEED = {
    meta: { version: "1.2", msg_type: 1, sender_id: "a1b2c3", receiver_id: "d4e5f6", ttl: 300, trace_id: "t7u8v9" },
    payload: { task_id: "x1y2z3", tool: "calculator", expression: "2+2" },
  };
  const EVENT = { meta: { ...SEED.meta, msg_type: 5, ttl: 0.5, x_future: [1] }, payload: {}, extra: true };

  test("on the protocol's seed request and an event with fields of its own", () => {
    for (const body of [SEED, EVENT]) {
      expect(isValidMetaForm(body)).toBe(true);
      expect(MetaFormSchema.safeParse(body).success).toBe(true);
    }
  });

  test("on 5,000 randomly broken bodies", () => {
    expectAgreement(isValidMetaForm, MetaFormSchema, [SEED, EVENT], 0x3e7a);
  });
});

describe("schemas built on first use", () => {
  test("behave as zod schemas: composed, inspected, converted to JSON Schema", () => {
    expect(EnvelopeSchema instanceof z.ZodType).toBe(true);
    expect(Object.keys(HelloSchema.shape)).toContain("codecs");
    expect(z.object({ env: EnvelopeSchema }).safeParse({ env: {} }).success).toBe(false);
    expect(z.toJSONSchema(PayloadSchema)).toMatchObject({ type: "object" });
    expect(ControlFrameSchema.parse({ message_type: "ack", seq: 1 })).toEqual({ message_type: "ack", seq: 1 });
    expect(loadZod().string().safeParse(1).success).toBe(false);
  });

  test("load zod only when a refusal needs explaining", async () => {
    // A process of its own: this one has loaded zod long ago. zod 4 marks globalThis when it runs.
    const script = `
      import { parseEnvelope, createRequest } from "${import.meta.dir}/../../mesh/envelope.ts";
      import { acceptHello } from "${import.meta.dir}/../../mesh/handshake.ts";
      import { parseRegistryUpdate } from "${import.meta.dir}/../../mesh/registry.ts";
      const loaded = () => "__zod_globalConfig" in globalThis;
      const out = {};
      parseEnvelope(createRequest("a", { target_agent: "b" }, { x: 1 }));
      acceptHello(${JSON.stringify(HELLO)}, { role: "acceptor", codecs: ["msgpack"] });
      for (const update of ${JSON.stringify(UPDATES)}) parseRegistryUpdate(update);
      out.afterValid = loaded();
      try { parseEnvelope({ message_id: "nope" }); } catch (e) { out.envelope = e.message; }
      out.afterRefusal = loaded();
      try { acceptHello({ ...${JSON.stringify(HELLO)}, window: 0 }, { role: "acceptor", codecs: ["msgpack"] }); } catch (e) { out.hello = e.message; }
      try { parseRegistryUpdate({ type: "remove" }); } catch (e) { out.registry = e.message; }
      console.log(JSON.stringify(out));
    `;
    const proc = Bun.spawn([BUN, "-e", script], { stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    // The marker is what this zod sets: it is there in this process, which imported zod.
    expect("__zod_globalConfig" in globalThis).toBe(true);
    expect(JSON.parse(stdout)).toEqual({
      afterValid: false,
      envelope: "invalid envelope: message_id: must be a ULID (26 Crockford base32 characters)",
      afterRefusal: true,
      hello: "bad hello: window: Too small: expected number to be >=1",
      registry: "malformed registry update: address: Invalid input: expected string, received undefined",
    });
  });
});
