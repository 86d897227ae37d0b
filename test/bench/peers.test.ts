/**
 * The peers measured next to hermes (Bun IPC, Node IPC, NATS, Redis Streams), checked for
 * correctness with tiny sizes, never for speed: every stream adapter's receiver counts exactly
 * the messages sent, and every round-trip adapter answers every request (and, where the client
 * times its own round trips, returns one sample per request). A peer whose server binary or
 * runtime is missing is skipped, with the reason in the test name.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { ROUND_TRIP_PEERS, STREAM_PEERS, usable } from "../../bench/adapters/peers.ts";
import { CumulativeAcks } from "../../bench/lib/acks.ts";
import { runCleanups } from "../../bench/lib/cleanup.ts";
import { UNPINNED } from "../../bench/lib/placement.ts";
import { tempDir } from "../../bench/lib/scenario.ts";
import { missingBinary } from "../../bench/lib/servers.ts";

// A test that fails or times out still disposes its session; should an await hang, this kills
// every fixture and server and removes the temporary directories anyway (bun test fires no "exit").
afterAll(runCleanups);

const ROUND_TRIPS = 50;
/** Counts that are not multiples of a window, a batch or a read count. */
const BURSTS = [10_001, 3_333];

/** The test's name, with why it is skipped when it is. */
function named(peer: { name: string; unavailable?(): string | undefined }, what: string): [string, boolean] {
  const reason = peer.unavailable?.();
  return [reason ? `${peer.name} ${what} (${reason})` : `${peer.name} ${what}`, reason !== undefined];
}

describe("round-trip peers answer every request", () => {
  for (const peer of ROUND_TRIP_PEERS) {
    const [name, skip] = named(peer, `answers ${ROUND_TRIPS} requests`);
    test.skipIf(skip)(name, async () => {
      using dir = tempDir();
      await using session = await peer.open({ dir: dir.path, placement: UNPINNED });
      let answered = 0;
      for (let i = 0; i < ROUND_TRIPS; i++) {
        await session.roundTrip(); // resolves only on the (checked) answer
        answered++;
      }
      expect(answered).toBe(ROUND_TRIPS);
      if (session.roundTrips) {
        const samples = await session.roundTrips(ROUND_TRIPS);
        expect(samples).toHaveLength(ROUND_TRIPS);
        for (const ns of samples) expect(ns).toBeGreaterThan(0);
      }
    });
  }
});

describe("stream peers deliver exactly the messages sent", () => {
  for (const peer of STREAM_PEERS) {
    const [name, skip] = named(peer, `delivers ${BURSTS.join(" + ")} messages`);
    test.skipIf(skip)(name, async () => {
      using dir = tempDir();
      await using session = await peer.open({ dir: dir.path, placement: UNPINNED });
      let total = 0;
      for (const n of BURSTS) {
        await session.send(n);
        total += n;
        // send() resolved: the receiver acknowledged all, so its count is already final.
        expect(await session.received()).toBe(total);
      }
      expect(session.frameBytes).toBeGreaterThan(128);
    });
  }
});

describe("availability", () => {
  test("a missing server binary makes its peer unavailable, with one note naming the package", () => {
    expect(missingBinary("hermes-no-such-server", "hermes-pkg")).toBe("hermes-no-such-server not found (Debian package hermes-pkg)");
    expect(missingBinary("sh", "dash")).toBeUndefined();
    const present = { name: "present" };
    const absent = { name: "absent", unavailable: () => missingBinary("hermes-no-such-server", "hermes-pkg") };
    const { peers, notes } = usable([present, absent], "stream");
    expect(peers).toEqual([present]);
    expect(notes).toEqual(["stream: absent skipped: hermes-no-such-server not found (Debian package hermes-pkg)"]);
  });
});

describe("CumulativeAcks", () => {
  test("a burst keeps at most the window unacknowledged and ends when all are acknowledged", async () => {
    const acks = new CumulativeAcks();
    let sent = 0;
    let maxInFlight = 0;
    const done = acks.burst(1000, 64, (max) => {
      const k = Math.min(max, 10);
      sent += k;
      maxInFlight = Math.max(maxInFlight, sent - acks.acked);
      queueMicrotask(() => acks.update(acks.acked + k)); // the receiver acknowledges later
      return k;
    });
    await done;
    expect(sent).toBe(1000);
    expect(acks.acked).toBe(1000);
    expect(maxInFlight).toBeLessThanOrEqual(64);
  });

  test("a failed receiver rejects the pending wait", async () => {
    const acks = new CumulativeAcks();
    const waiting = acks.until(10);
    acks.fail(new Error("gone"));
    expect(waiting).rejects.toThrow("gone");
  });
});
