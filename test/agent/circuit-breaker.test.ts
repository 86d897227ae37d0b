/** The circuit breaker on its own, with an injected clock: states, the single half-open trial, what counts. */
import { expect, test } from "bun:test";
import { CircuitBreaker } from "../../src/agent/circuit-breaker.ts";
import { ErrorCode, HermesError } from "../../mesh/errors.ts";

function setup(options: { failureThreshold?: number; coolDownMs?: number; isFailure?: (e: unknown) => boolean } = {}) {
  const clock = { now: 0 };
  const breaker = new CircuitBreaker({ name: "llm", failureThreshold: 3, coolDownMs: 1000, now: () => clock.now, ...options });
  return { clock, breaker };
}
const ok = () => Promise.resolve("ok");
const boom = () => Promise.reject(new Error("boom"));

/** The HermesError `run` rejects with without calling `fn` (fails the test if it calls it). */
async function rejected(breaker: CircuitBreaker): Promise<HermesError> {
  let called = false;
  const error = await breaker.run(async () => void (called = true)).then(() => undefined, (e: unknown) => e);
  expect(called).toBe(false);
  if (!(error instanceof HermesError)) throw new Error(`expected a HermesError, got ${error}`);
  return error;
}

test("closed → open after N consecutive failures; a success in between starts the count again", async () => {
  const { breaker } = setup();
  await expect(breaker.run(boom)).rejects.toThrow("boom");
  await expect(breaker.run(boom)).rejects.toThrow("boom");
  expect(await breaker.run(ok)).toBe("ok");
  expect(breaker.consecutiveFailures).toBe(0);
  for (let i = 0; i < 2; i++) await expect(breaker.run(boom)).rejects.toThrow("boom");
  expect(breaker.state).toBe("closed");
  await expect(breaker.run(boom)).rejects.toThrow("boom");
  expect(breaker.state).toBe("open");
});

test("open rejects at once with code 10, naming the circuit, with the time left as retry_after_ms", async () => {
  const { clock, breaker } = setup();
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  clock.now = 400;
  const error = await rejected(breaker);
  expect(error.code).toBe(ErrorCode.UNAVAILABLE);
  expect(error.message).toContain("circuit 'llm' is open after 3 consecutive failures");
  expect(error.fields).toEqual({ reason: "circuit open", circuit: "llm", retry_after_ms: 600 });
});

test("half-open after the cool-down lets exactly one trial through; its success closes", async () => {
  const { clock, breaker } = setup();
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  clock.now = 999;
  expect(breaker.state).toBe("open");
  clock.now = 1000;
  expect(breaker.state).toBe("half-open");
  const trial = Promise.withResolvers<string>();
  const pending = breaker.run(() => trial.promise);
  // While the trial is in flight everybody else is turned away.
  expect((await rejected(breaker)).fields.retry_after_ms).toBe(1000);
  trial.resolve("recovered");
  expect(await pending).toBe("recovered");
  expect(breaker.state).toBe("closed");
  expect(await breaker.run(ok)).toBe("ok");
});

test("a failed trial opens the circuit for a fresh cool-down", async () => {
  const { clock, breaker } = setup();
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  clock.now = 1500;
  await expect(breaker.run(boom)).rejects.toThrow("boom");
  expect(breaker.state).toBe("open");
  clock.now = 2499;
  expect((await rejected(breaker)).fields.retry_after_ms).toBe(1);
  clock.now = 2500;
  expect(breaker.state).toBe("half-open");
});

test("errors isFailure does not count leave the count alone; one that ends the trial lets the next call try", async () => {
  const notCounted = () => Promise.reject(new HermesError(ErrorCode.INVALID_REQUEST, "bad request"));
  const { clock, breaker } = setup({ isFailure: (e) => !(e instanceof HermesError && e.code === ErrorCode.INVALID_REQUEST) });
  for (let i = 0; i < 5; i++) await breaker.run(notCounted).catch(() => {});
  expect(breaker.state).toBe("closed");
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  clock.now = 1000;
  await expect(breaker.run(notCounted)).rejects.toThrow("bad request");
  expect(breaker.state).toBe("half-open");
  expect(await breaker.run(ok)).toBe("ok");
  expect(breaker.state).toBe("closed");
});

test("calls that started before the circuit opened do not close it when they succeed late", async () => {
  const { breaker } = setup();
  const slow = Promise.withResolvers<string>();
  const late = breaker.run(() => slow.promise);
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  slow.resolve("late");
  expect(await late).toBe("late");
  expect(breaker.state).toBe("open");
  expect(breaker.consecutiveFailures).toBe(3);
});

test("a per-call isFailure overrides the breaker's; reset closes it; bad options are refused", async () => {
  const { breaker } = setup();
  for (let i = 0; i < 5; i++) await breaker.run(boom, () => false).catch(() => {});
  expect(breaker.state).toBe("closed");
  for (let i = 0; i < 3; i++) await breaker.run(boom).catch(() => {});
  breaker.reset();
  expect(breaker.state).toBe("closed");
  expect(() => new CircuitBreaker({ failureThreshold: 0 })).toThrow(HermesError);
  expect(new CircuitBreaker()).toMatchObject({ failureThreshold: 5, coolDownMs: 30_000 });
});
