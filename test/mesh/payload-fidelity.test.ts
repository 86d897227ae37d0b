/**
 * Payload fidelity through real processes (docs/protocol.md §3, "payload values"): every value of
 * the public msgpack-test-suite, in every encoding it lists, sent in a request payload `{ v }`
 * and echoed by actors/echo.ts comes back equal, on every path: a foreign Python client speaking
 * plain msgpack (to echo, to echo on Deno, and through an actor that asks echo: actor to actor), a Bun client on
 * msgpackr records, a Bun peer on plain msgpack, and the HTTP gateway with its JSON forms. What
 * JavaScript cannot be given is refused at once with code 2 naming `payload.v`, and the
 * connection goes on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MsgpackExt, MsgpackTimestamp } from "../../mesh/msgpack-values.ts";
import { createPlainCodec } from "../../mesh/codecs.ts";
import { newMessageId } from "../../mesh/ids.ts";
import { waitFor } from "../helpers.ts";
import { startTestMesh, type TestMesh } from "../actor/mesh-harness.ts";
import { SUITE_PATH, splicedPayload, suiteEncodings, type SuiteEncoding } from "../protocol/msgpack-suite.ts";
import { rawConnect } from "./raw-client.ts";

const FIXTURE = `${import.meta.dir}/payload-fidelity-fixture.py`;

/** A Python 3 with Debian's python3-msgpack (.ci/run installs it); CI must have one. */
function pythonWithMsgpack(): string | undefined {
  for (const python of ["/usr/bin/python3", "python3"]) {
    try {
      if (Bun.spawnSync([python, "-c", "import msgpack"], { stderr: "ignore" }).exitCode === 0) return python;
    } catch {
      // Not installed under this name.
    }
  }
  return undefined;
}
const PYTHON = pythonWithMsgpack();
if (!PYTHON && process.env.CI) throw new Error("python3 with msgpack is missing: .ci/run installs python3-msgpack");

interface PythonSummary {
  suite: number;
  suite_equal: number;
  ext: number;
  ext_equal: number;
  keys: number;
  keys_equal: number;
  unreadable: Array<{ label: string; type: string; code: number; reason: string }>;
  after: unknown;
  failures: string[];
  unanswered: number;
}

describe("payload fidelity through real actor processes", () => {
  let t: TestMesh;
  let encodings: SuiteEncoding[];

  beforeAll(async () => {
    encodings = await suiteEncodings();
    t = await startTestMesh(`
mesh:
  name: fidelity
supervisor:
  children:
    - actor: echo
      module: {ACTORS}/echo.ts
    - actor: forwarder
      module: {FIXTURES}/forwarder.ts
    - actor: deno-echo
      module: {ACTORS}/echo.ts
      runtime: deno
`, { gateway: { port: 0 } });
  });
  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
  });

  async function python(target: string): Promise<PythonSummary> {
    const proc = Bun.spawn([PYTHON!, FIXTURE, t.mesh.registry.byAddress(target)!.socket, target, SUITE_PATH], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`the Python client failed (${code}): ${err}`);
    return JSON.parse(out.trim().split("\n").pop()!);
  }

  function expectPythonSummary(summary: PythonSummary, path: string): void {
    console.log(`${path}: ${summary.suite_equal} of ${summary.suite} suite encodings equal, ${summary.ext_equal} of ${summary.ext} extension encodings equal, ${summary.keys_equal} of ${summary.keys} maps with typed keys equal`);
    expect(summary.failures).toEqual([]);
    expect(summary.suite).toBe(233);
    expect(summary.suite_equal).toBe(233);
    expect(summary.ext).toBe(255 * 2);
    expect(summary.ext_equal).toBe(255 * 2);
    expect(summary.keys).toBe(6);
    expect(summary.keys_equal).toBe(6);
    expect(summary.unreadable).toHaveLength(4);
    for (const refusal of summary.unreadable) {
      expect({ label: refusal.label, type: refusal.type, code: refusal.code }).toEqual({ label: refusal.label, type: "error", code: 2 });
      expect(refusal.reason).toStartWith("payload.v: ");
    }
    expect(summary.after).toBe("still here");
  }

  test.skipIf(!PYTHON)("a Python client on plain msgpack: every suite value in every encoding, and every extension type code, echoed equal", async () => {
    expectPythonSummary(await python("echo"), "python -> echo");
  });

  test.skipIf(!PYTHON)("the same from Python to an actor that asks echo (actor to actor on hermes-envelope, payloads as msgpackr records)", async () => {
    expectPythonSummary(await python("forwarder"), "python -> forwarder -> echo");
  });

  test.skipIf(!PYTHON)("the same from Python to echo running on Deno", async () => {
    expectPythonSummary(await python("deno-echo"), "python -> echo on deno");
  });

  test("a Bun client on hermes-envelope (payloads as msgpackr records) gets every suite value back equal, from echo, through the forwarder and from echo on Deno", async () => {
    const client = await t.client();
    const plain = createPlainCodec();
    for (const target of ["echo", "forwarder", "deno-echo"]) {
      const answers = await Promise.all(encodings.map(async ({ raw }) => {
        const { v } = plain.decode(splicedPayload(raw)) as { v: unknown };
        return (await client.request(target, { v }, { timeoutMs: 10_000 })).payload.v;
      }));
      const equal = answers.filter((v, i) => Bun.deepEquals(v, encodings[i]!.expected, true)).length;
      console.log(`bun client (hermes-envelope) -> ${target}: ${equal} of ${encodings.length} equal`);
      expect(answers).toEqual(encodings.map((e) => e.expected));
      expect(equal).toBe(233);
    }
  });

  test("a Bun peer on plain msgpack gets every suite value back equal", async () => {
    const raw = await rawConnect(t.mesh.registry.byAddress("echo")!.socket);
    try {
      raw.sendFrame({ message_type: "hello", protocol: 1, node: "bun-plain", codecs: ["msgpack"], window: 4096 });
      const plain = createPlainCodec();
      const ids = encodings.map(({ raw: bytes }, i) => {
        const { v } = plain.decode(splicedPayload(bytes)) as { v: unknown };
        const message_id = newMessageId();
        raw.sendFrame({
          message_id, message_type: "request", trace_id: message_id, source_agent: "bun-plain", target_agent: "echo",
          reply_to: "bun-plain", timestamp: Date.now(), ttl: 10_000, seq: i + 1, payload: { v },
        });
        return message_id;
      });
      const answered = () => new Map(raw.frames.filter((f) => f.message_type === "response").map((f) => [f.correlation_id, f.payload.v]));
      await waitFor(() => answered().size === ids.length, "every answer on the plain link");
      const answers = answered();
      const equal = ids.filter((id, i) => Bun.deepEquals(answers.get(id), encodings[i]!.expected, true)).length;
      console.log(`bun peer (plain) -> echo: ${equal} of ${ids.length} equal`);
      expect(ids.map((id) => answers.get(id))).toEqual(encodings.map((e) => e.expected));
      expect(equal).toBe(233);
    } finally {
      raw.end();
    }
  });

  test("values the client cannot send are refused at once with code 2 naming the path, and the link goes on", async () => {
    const client = await t.client();
    const t0 = performance.now();
    const refusal = await client.request("echo", { v: [1, 2n ** 64n] }, { timeoutMs: 5000 }).catch((error) => error);
    expect(refusal.code).toBe(2);
    expect(refusal.fields.reason).toBe("payload.v.1: 18446744073709551616 does not fit in 64 bits (MessagePack ints are int64 or uint64)");
    expect(performance.now() - t0).toBeLessThan(1000);
    const ts = new MsgpackTimestamp(2n ** 62n, 1);
    expect((await client.request("echo", { ts, date: new Date(1234) }, { timeoutMs: 5000 })).payload).toEqual({ ts, date: new MsgpackTimestamp(1, 234_000_000) });
  });

  describe("through the HTTP gateway", () => {
    const FORMS = {
      t64: { $timestamp: { seconds: 1514862245, nanoseconds: 678901234 } },
      t96: { $timestamp: { seconds: "9223372036854775807", nanoseconds: 999999999 } },
      before1970: { $timestamp: { seconds: -1, nanoseconds: 999999999 } },
      ext: { $ext: { type: 1, base64: "EA==" } },
      ext_reserved: { $ext: { type: -128, base64: "" } },
      max_u64: { $bigint: "18446744073709551615" },
      min_i64: { $bigint: "-9223372036854775808" },
      bin: { $bin: "AP8=" },
      literal: { $map: { $bin: "a map whose only key is $bin, not binary" } },
      list: [{ $timestamp: { seconds: 0, nanoseconds: 1 } }, { $ext: { type: 114, base64: "cHFy" } }],
      plain: { n: 5_000_000_000, s: "名字" },
      typed_keys: { $entries: [[1, "int"], [true, { $entries: [[null, "nil"]] }], [{ $bin: "aw==" }, "bin"]] },
      own_proto: { $entries: [["__proto__", { x: 1 }], ["y", 2]] },
    };
    const post = (body: unknown) =>
      fetch(`${t.mesh.gateway!.url}/hermes/v1/invoke`, { method: "POST", headers: { "content-type": "application/hermes+json" }, body: JSON.stringify(body) });
    /** A response body as JSON, untyped: the assertions say what it must hold. */
    const json = (response: Response): Promise<any> => response.json();
    const meta = { version: "1.2", msg_type: 1, sender_id: "http", receiver_id: "echo", ttl: 10, trace_id: "fidelity" };

    test("a timestamp, extensions, 64-bit integers and binary go in and come back in their JSON forms (meta and native)", async () => {
      const metaAnswer = await json(await post({ meta, payload: FORMS }));
      expect(metaAnswer.payload).toEqual(FORMS);
      const id = newMessageId();
      const native = await json(await post({
        message_id: id, message_type: "request", trace_id: id, source_agent: "http", target_agent: "echo", reply_to: "http",
        timestamp: Date.now(), ttl: 10_000, payload: FORMS,
      }));
      expect(native).toMatchObject({ message_type: "response", correlation_id: id, payload: FORMS });
    });

    test("what the actor gets is the real value, and an actor's answer reaches JSON in the same forms", async () => {
      // Through the forwarder, the values cross actor to actor (records) and back to the gateway.
      const answer = await json(await post({ meta: { ...meta, receiver_id: "forwarder" }, payload: FORMS }));
      expect(answer.payload).toEqual(FORMS);
      const client = await t.client();
      const direct = (await client.request("echo", { ext: new MsgpackExt(1, new Uint8Array([0x10])) }, { timeoutMs: 5000 })).payload;
      expect(direct.ext).toEqual(new MsgpackExt(1, new Uint8Array([0x10])));
    });

    test("a malformed JSON form is refused with HTTP 400 and code 2 naming the path", async () => {
      const response = await post({ meta, payload: { v: { $timestamp: { seconds: 1, nanoseconds: 1e9 } } } });
      expect(response.status).toBe(400);
      const { payload } = await json(response);
      expect(payload).toMatchObject({ error_code: 2, reason: expect.stringMatching(/^payload\.v: \$timestamp: /) });
      const bigint = await json(await post({ meta, payload: { v: [{ $bigint: "18446744073709551616" }] } }));
      expect(bigint.payload).toMatchObject({ error_code: 2, reason: "payload.v.0: $bigint: 18446744073709551616 does not fit in 64 bits" });
    });
  });
});
