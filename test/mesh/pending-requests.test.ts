import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createReply, createRequest, MessageType } from "../../mesh/envelope.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { PendingRequests } from "../../mesh/pending-requests.ts";
import { MAX_TIMER_MS, recordTimerDelays } from "../helpers.ts";

const ROOT = join(import.meta.dir, "../..");

function newRequest() {
  return createRequest("tester", { target_agent: "peer" }, {});
}

/** When each wait settled, ms after `t0`, and how. */
function track(pending: PendingRequests, timeoutMs: number, t0: number) {
  const request = newRequest();
  const outcome = pending.wait(request, { timeoutMs }).then(
    () => ({ ok: true as const, atMs: performance.now() - t0 }),
    (error: HermesError) => ({ ok: false as const, code: error.code, atMs: performance.now() - t0 }),
  );
  return { request, outcome };
}

describe("request deadlines behind one timer", () => {
  test("each waiting request times out at its own deadline (code 3), in deadline order, and an answered one never does", async () => {
    const pending = new PendingRequests();
    const t0 = performance.now();
    const slow = track(pending, 1000, t0);
    const answered = track(pending, 60, t0);
    const fast = track(pending, 40, t0); // earlier than the timer set for the first: it must move
    const middle = track(pending, 80, t0);
    expect(pending.handle(createReply(MessageType.RESPONSE, answered.request, "peer", {}))).toBe(true);
    const [a, b, c, d] = await Promise.all([fast.outcome, middle.outcome, slow.outcome, answered.outcome]);
    expect(d.ok).toBe(true);
    for (const [result, timeout] of [[a, 40], [b, 80], [c, 1000]] as const) {
      expect(result).toMatchObject({ ok: false, code: ErrorCode.TASK_TIMEOUT });
      expect(result.atMs).toBeGreaterThanOrEqual(timeout - 1);
      expect(result.atMs).toBeLessThan(timeout + 2000);
    }
    expect(a.atMs).toBeLessThan(900); // not held until the first-armed deadline
    expect(a.atMs).toBeLessThan(b.atMs);
    expect(b.atMs).toBeLessThan(c.atMs);
    expect(pending.size).toBe(0);
  });

  test("requests answered one after another keep nothing waiting, and a later one still times out", async () => {
    const pending = new PendingRequests();
    for (let i = 0; i < 2000; i++) {
      const request = newRequest();
      const answer = pending.wait(request, { timeoutMs: 30 });
      pending.handle(createReply(MessageType.RESPONSE, request, "peer", { i }));
      expect((await answer).payload).toEqual({ i });
    }
    expect(pending.size).toBe(0);
    const t0 = performance.now();
    const late = await track(pending, 30, t0).outcome;
    expect(late).toMatchObject({ ok: false, code: ErrorCode.TASK_TIMEOUT });
  });

  test("a given-up request leaves the others' deadlines alone", async () => {
    const given: string[] = [];
    const pending = new PendingRequests((request) => given.push(request.message_id));
    const t0 = performance.now();
    const first = track(pending, 50, t0);
    const second = track(pending, 50, t0);
    pending.giveUp(first.request.message_id, new HermesError(ErrorCode.TASK_TIMEOUT, "cancelled"));
    expect((await first.outcome).ok).toBe(false);
    expect(given).toEqual([first.request.message_id]);
    const late = await second.outcome;
    expect(late).toMatchObject({ ok: false, code: ErrorCode.TASK_TIMEOUT });
    expect(late.atMs).toBeGreaterThanOrEqual(49);
    expect(given).toEqual([first.request.message_id, second.request.message_id]);
  });

  test("a cancel that cannot be sent still rejects its request, and later deadlines still fire", async () => {
    const pending = new PendingRequests(() => {
      throw new HermesError(ErrorCode.RESOURCE_EXHAUSTED, "send backlog full"); // the peer's link is full
    });
    const t0 = performance.now();
    const first = track(pending, 20, t0);
    const later = track(pending, 120, t0);
    expect(await first.outcome).toMatchObject({ ok: false, code: ErrorCode.TASK_TIMEOUT });
    const result = await later.outcome;
    expect(result).toMatchObject({ ok: false, code: ErrorCode.TASK_TIMEOUT });
    expect(result.atMs).toBeGreaterThanOrEqual(119);
    expect(pending.size).toBe(0);
  });

  test("in a slot where most requests were answered, out of order, exactly the unanswered ones time out", async () => {
    // 5,000 waits filed in a few 10 ms slots; answering most of them in a shuffled order compacts the slots' lists.
    const pending = new PendingRequests();
    const t0 = performance.now();
    const waits = Array.from({ length: 5000 }, () => track(pending, 300, t0));
    const order = waits.map((_, i) => i).sort((a, b) => ((a * 7919) % 5000) - ((b * 7919) % 5000));
    const unanswered = new Set(order.filter((i) => i % 1000 === 999));
    for (const i of order) if (!unanswered.has(i)) pending.handle(createReply(MessageType.RESPONSE, waits[i]!.request, "peer", {}));
    expect(pending.size).toBe(unanswered.size);
    const outcomes = await Promise.all(waits.map((w) => w.outcome));
    outcomes.forEach((outcome, i) => expect(outcome).toMatchObject(unanswered.has(i) ? { ok: false, code: ErrorCode.TASK_TIMEOUT } : { ok: true }));
    for (const i of unanswered) expect(outcomes[i]!.atMs).toBeGreaterThanOrEqual(299);
    expect(pending.size).toBe(0);
  });

  test("the deadline timer keeps no process alive once nothing waits", async () => {
    // A script that answers one request with a 60 s timeout and then has nothing to do must exit now.
    const script = `
      import { PendingRequests } from ${JSON.stringify(join(ROOT, "mesh/pending-requests.ts"))};
      import { createReply, createRequest, MessageType } from ${JSON.stringify(join(ROOT, "mesh/envelope.ts"))};
      const pending = new PendingRequests();
      for (let i = 0; i < 3; i++) {
        const request = createRequest("tester", { target_agent: "peer" }, {});
        const answer = pending.wait(request, { timeoutMs: 60_000 });
        setTimeout(() => pending.handle(createReply(MessageType.RESPONSE, request, "peer", {})), 5);
        await answer;
      }
      console.log("answered");
    `;
    const proc = Bun.spawn([process.execPath, "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    try {
      const exitCode = await proc.exited;
      expect(await new Response(proc.stdout).text()).toBe("answered\n");
      expect(exitCode).toBe(0);
    } finally {
      clearTimeout(timer);
      proc.kill("SIGKILL");
    }
  });
});

describe("outcomes and the link a cancel takes", () => {
  test("a sent request's outcome is told as it settles, before its waiter resumes: a response, an error answer with its code, a timeout, a failure; an unsent one's is not", async () => {
    const told: Array<[string, number | undefined, number]> = [];
    const gaveUp: Array<[string, unknown]> = [];
    const pending = new PendingRequests<string>((request, _error, via) => gaveUp.push([request.message_id, via]), (to, error, latencyMs) => told.push([to, error?.code, latencyMs]));
    const [answered, refused, late, failed, unsent] = [newRequest(), newRequest(), newRequest(), newRequest(), newRequest()];
    const waits = [answered, refused, late, failed, unsent].map((request) => pending.wait(request, { timeoutMs: request === late ? 20 : 10_000 }).then(() => told.length, () => told.length));
    for (const [request, to] of [[answered, "a"], [refused, "b"], [late, "c"], [failed, "d"]] as const) pending.sent(request.message_id, to, `link-${to}`);
    pending.handle(createReply(MessageType.RESPONSE, answered, "peer", {}));
    pending.handle(createReply(MessageType.ERROR, refused, "peer", { error_code: ErrorCode.INTERNAL, message: "boom" }));
    pending.fail(failed.message_id, new HermesError(ErrorCode.UNAVAILABLE, "gone"));
    pending.fail(unsent.message_id, new HermesError(ErrorCode.UNROUTABLE, "nowhere"));
    const seenBy = await Promise.all(waits);
    expect(told.map(([to, code]) => [to, code])).toEqual([["a", undefined], ["b", ErrorCode.INTERNAL], ["d", ErrorCode.UNAVAILABLE], ["c", ErrorCode.TASK_TIMEOUT]]);
    for (const [, , latencyMs] of told) expect(latencyMs).toBeGreaterThanOrEqual(0);
    expect(told[3]![2]).toBeGreaterThanOrEqual(19);
    // Told before its waiter resumes, not in a later task (answered 1st, refused 2nd, failed 3rd, late 4th).
    for (const [i, nth] of [[0, 1], [1, 2], [3, 3], [2, 4]] as const) expect(seenBy[i]!).toBeGreaterThanOrEqual(nth);
    expect(gaveUp).toEqual([[late.message_id, "link-c"]]);
  });
});

describe("the same request waited for twice (a client's retry)", () => {
  const answer = (request: ReturnType<typeof newRequest>) => createReply(MessageType.RESPONSE, request, "peer", { ok: true });

  test("both waits get the one answer", async () => {
    const pending = new PendingRequests();
    const request = newRequest();
    const first = pending.wait(request, { timeoutMs: 5000 });
    const second = pending.wait(request, { timeoutMs: 5000 });
    expect(pending.size).toBe(1);
    pending.handle(answer(request));
    expect([(await first).payload, (await second).payload]).toEqual([{ ok: true }, { ok: true }]);
  });

  test("the second wait's own shorter timeout ends it alone; the first still gets the answer", async () => {
    const gaveUp: string[] = [];
    const pending = new PendingRequests((request) => gaveUp.push(request.message_id));
    const request = newRequest();
    const first = pending.wait(request, { timeoutMs: 5000 });
    const t0 = performance.now();
    const second = await pending.wait(request, { timeoutMs: 30 }).catch((error: HermesError) => error);
    expect(second).toMatchObject({ code: ErrorCode.TASK_TIMEOUT, fields: { timeout_ms: 30 } });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect([pending.size, gaveUp]).toEqual([1, []]); // no cancel: the request goes on for the first
    pending.handle(answer(request));
    expect((await first).payload).toEqual({ ok: true });
  });

  test("the second wait's own signal ends it alone, at once when already aborted", async () => {
    const pending = new PendingRequests();
    const request = newRequest();
    const first = pending.wait(request, { timeoutMs: 5000 });
    const aborted = AbortSignal.abort();
    expect(await pending.wait(request, { timeoutMs: 5000, signal: aborted }).catch((e: HermesError) => e.message)).toBe("request cancelled");
    const controller = new AbortController();
    const second = pending.wait(request, { timeoutMs: 5000, signal: controller.signal }).catch((e: HermesError) => e.message);
    controller.abort();
    expect(await second).toBe("request cancelled");
    expect(pending.size).toBe(1);
    pending.handle(answer(request));
    expect((await first).payload).toEqual({ ok: true });
  });

  test("an error answer or the first's timeout reaches a second wait that has limits of its own", async () => {
    const pending = new PendingRequests();
    const request = newRequest();
    const first = pending.wait(request, { timeoutMs: 40 }).catch((e: HermesError) => e.code);
    const second = pending.wait(request, { timeoutMs: 30_000, signal: new AbortController().signal }).catch((e: HermesError) => e.code);
    expect([await first, await second]).toEqual([ErrorCode.TASK_TIMEOUT, ErrorCode.TASK_TIMEOUT]);
    const again = newRequest();
    const third = pending.wait(again, { timeoutMs: 5000 }).catch(() => "first");
    const fourth = pending.wait(again, { timeoutMs: 1000 }).catch((e: HermesError) => e.code);
    pending.handle(createReply(MessageType.ERROR, again, "peer", new HermesError(ErrorCode.INVALID_REQUEST, "no").toPayload()));
    expect([await third, await fourth]).toEqual(["first", ErrorCode.INVALID_REQUEST]);
  });

  test("timeouts past setTimeout's range (2^31 ms) get no timer that would fire at once", async () => {
    const pending = new PendingRequests();
    const request = newRequest();
    const far = 2 ** 31 + 10;
    const { result: [first, second], delays } = await recordTimerDelays(async () => [
      pending.wait(request, { timeoutMs: far }),
      pending.wait(request, { timeoutMs: far + 5, signal: new AbortController().signal }),
    ]);
    // The deadline timer is set for the longest delay there is (it sets itself again then); a longer one would fire at once.
    expect(delays).toEqual([MAX_TIMER_MS]);
    pending.handle(answer(request));
    expect([(await first).payload, (await second).payload]).toEqual([{ ok: true }, { ok: true }]);
  });
});
