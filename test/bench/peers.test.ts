/**
 * The peers measured next to hermes (Bun IPC, Node IPC, NATS, Redis Streams), checked for
 * correctness with tiny sizes, never for speed: every stream adapter's receiver counts exactly
 * the messages sent, and every round-trip adapter answers every request (and, where the client
 * times its own round trips, returns one sample per request). A peer whose server binary or
 * runtime is missing is skipped, with the reason in the test name.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROUND_TRIP_PEERS, STREAM_PEERS, usable } from "../../bench/adapters/peers.ts";
import { CumulativeAcks } from "../../bench/lib/acks.ts";
import { runCleanups } from "../../bench/lib/cleanup.ts";
import { UNPINNED } from "../../bench/lib/placement.ts";
import { tempDir } from "../../bench/lib/scenario.ts";
import { missingPackage } from "../../bench/lib/optional-package.ts";
import { missingServer, type ServerBinary } from "../../bench/lib/servers.ts";

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
  const NO_SUCH: ServerBinary = { binary: "hermes-no-such-server", debianPackage: "hermes-pkg", envVar: "HERMES_NO_SUCH_SERVER" };

  test("a missing server binary makes its peer unavailable, with one line saying how to install it", () => {
    const howTo = "hermes-no-such-server not found on PATH (Debian/Ubuntu: apt-get install hermes-pkg; or set HERMES_NO_SUCH_SERVER=/path/to/hermes-no-such-server)";
    expect(missingServer(NO_SUCH, {})).toBe(howTo);
    expect(missingServer({ ...NO_SUCH, binary: "sh" }, {})).toBeUndefined();
    const present = { name: "present" };
    const absent = { name: "absent", unavailable: () => missingServer(NO_SUCH, {}) };
    const { peers, skipped } = usable([present, absent], "stream");
    expect(peers).toEqual([present]);
    expect(skipped).toEqual([`stream: peer absent skipped: ${howTo}`]);
  });

  test("--quick leaves Node IPC and Redis to the full run, each with its line, and keeps Bun IPC and NATS", () => {
    const names = [...ROUND_TRIP_PEERS, ...STREAM_PEERS].map((peer) => ({ name: peer.name }));
    const quick = usable(names, "pingpong", undefined, true);
    expect(quick.peers.map((p) => p.name)).toEqual(names.map((p) => p.name).filter((n) => !/^(Node IPC|Redis)/.test(n)));
    expect(quick.peers.map((p) => p.name)).toEqual(expect.arrayContaining(["Bun IPC", "NATS request", "NATS publish"]));
    expect(quick.skipped).toContain("pingpong: peer Redis streams XADD skipped: measured in the full run only (--quick keeps Bun IPC and NATS)");
    expect(quick.skipped).toHaveLength(names.length - quick.peers.length);
    expect(usable(names, "pingpong").peers).toHaveLength(names.length);
    // BENCH_PEERS names the contenders: one it names is measured in --quick too.
    const saved = process.env.BENCH_PEERS;
    process.env.BENCH_PEERS = "^Redis streams XADD$";
    try {
      expect(usable(names, "stream", undefined, true).peers.map((p) => p.name)).toEqual(["Redis streams XADD"]);
    } finally {
      if (saved === undefined) delete process.env.BENCH_PEERS;
      else process.env.BENCH_PEERS = saved;
    }
  });

  test("the server's variable names the binary to use instead of a search", () => {
    expect(missingServer(NO_SUCH, { HERMES_NO_SUCH_SERVER: "/bin/sh" })).toBeUndefined();
    expect(missingServer({ ...NO_SUCH, binary: "sh" }, { HERMES_NO_SUCH_SERVER: "/nonexistent/server" })).toBe(
      "HERMES_NO_SUCH_SERVER=/nonexistent/server is not an executable file (unset it to search the PATH for sh)",
    );
  });

  test("a missing optional package makes its peer unavailable, with the npm command at the pinned version", () => {
    expect(missingPackage("hdr-histogram-js")).toBeUndefined();
    expect(missingPackage("hermes-no-such-package")).toBe("the hermes-no-such-package package is not installed (npm install hermes-no-such-package)");
    const pinned = (JSON.parse(readFileSync(join(import.meta.dir, "../../package.json"), "utf8")) as { optionalDependencies: Record<string, string> }).optionalDependencies;
    expect(pinned.nats).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
