/**
 * The receiver contract of the transport conformance suite (test/conformance/transport-suite.ts),
 * shared by every Bun/Deno receiver fixture whatever carries its envelopes: the handler by
 * payload, and the dedupe memory that writes `seen` ledger lines. Runtime-neutral (node:fs only).
 *
 * Handlers by payload: `{ progress: n }` sends n progress messages first, `{ throw: "msg" }`
 * throws, `{ sleep_ms }` waits (honouring cancel), `{ hold: true }` waits for a `{ release: true }`
 * request when holding, `{ release: true }` releases every held request and answers
 * `{ released: n }`, `{ die: true }` kills its own process with SIGKILL (a poison message);
 * anything else is echoed unchanged.
 *
 * Stdout: `sleeping <message_id> <trace_id>` and `cancelled <message_id> <trace_id>` around a
 * sleep. Ledger lines (a synchronous append, so they survive the SIGKILL that may follow):
 * `begin <life> <message_id> <attempt> <key>` when a handler starts (`key` is `payload.key` or
 * `-`), and `seen <life> <message_id> <state>` when a redelivery is found in the dedupe memory.
 *
 * @example
 * const contract = receiverContract({ life: "1", holding: true, ledgerFile: "/tmp/l" });
 * new RequestChannel(connection, "echo", contract.handle);
 */
import { appendFileSync } from "node:fs";
import { DedupeCache, type DedupeEntry, type DedupeStore } from "../../mesh/dedupe-cache.ts";
import type { RequestHandler } from "../../mesh/requests.ts";
import type { Envelope } from "../../mesh/envelope.ts";

/** What a receiver process was told (from its environment). */
export interface ReceiverSettings {
  life: string;
  holding: boolean;
  ledgerFile: string | undefined;
}

/** The handler and the ledger-writing dedupe memory of one receiver process. */
export function receiverContract(settings: ReceiverSettings): { handle: RequestHandler; dedupe: () => DedupeStore } {
  const { life, holding, ledgerFile } = settings;
  const ledger = (line: string) => {
    if (ledgerFile) appendFileSync(ledgerFile, `${line}\n`);
  };
  const held = new Set<() => void>();

  const handle: RequestHandler = async (request, context) => {
    const payload = request.payload;
    ledger(`begin ${life} ${request.message_id} ${request.attempt ?? 1} ${payload.key ?? "-"}`);
    if (payload.die === true) process.kill(process.pid, "SIGKILL");
    if (payload.release === true) {
      const released = held.size;
      for (const release of held) release();
      held.clear();
      return { released };
    }
    if (payload.hold === true && holding) await new Promise<void>((resolve) => held.add(resolve));
    if (typeof payload.progress === "number") for (let i = 1; i <= payload.progress; i++) context.progress({ step: i });
    if (typeof payload.throw === "string") throw new Error(payload.throw);
    if (typeof payload.sleep_ms === "number") {
      console.log(`sleeping ${request.message_id} ${request.trace_id}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, payload.sleep_ms as number);
        context.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          console.log(`cancelled ${request.message_id} ${request.trace_id}`);
          resolve();
        });
      });
    }
    return payload;
  };

  /** The node's dedupe memory, telling the ledger whenever a redelivery is found in it. */
  class LedgerDedupe implements DedupeStore {
    #inner = new DedupeCache();
    lookup(id: string): DedupeEntry | undefined {
      const entry = this.#inner.lookup(id);
      if (entry) ledger(`seen ${life} ${id} ${entry.state}`);
      return entry;
    }
    begin(id: string, now?: number): void {
      this.#inner.begin(id, now);
    }
    complete(id: string, answer?: Envelope): void {
      this.#inner.complete(id, answer);
    }
    forget(id: string): void {
      this.#inner.forget(id);
    }
    releaseAnswer(id: string): void {
      this.#inner.releaseAnswer(id);
    }
  }

  return { handle, dedupe: () => new LedgerDedupe() };
}
