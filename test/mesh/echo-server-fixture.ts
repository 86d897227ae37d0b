/**
 * A listener in its own process for transport tests. Argv: <address> [requireToken].
 * Handlers by payload: `{ sleep_ms }` waits (honouring cancel), `{ progress: n }` sends n
 * progress messages first, `{ throw: "msg" }` throws, anything else is echoed.
 * Prints "ready <address>" when listening and "cancelled <message_id>" when a request is cancelled.
 */
import { parseAddress, formatAddress, listen } from "../../mesh/socket-transport.ts";
import { RequestChannel } from "../../mesh/requests.ts";

const [addressText, token] = process.argv.slice(2);
const address = parseAddress(addressText!);
const listener = await listen(address, {
  node: "echo",
  ...(token && { requireToken: token }),
  pingIntervalMs: Number(process.env.PING_MS ?? 5000),
  frameTimeoutMs: Number(process.env.FRAME_TIMEOUT_MS ?? 30000),
  helloTimeoutMs: Number(process.env.HELLO_TIMEOUT_MS ?? 5000),
  onConnection(connection) {
    new RequestChannel(connection, "echo", async (request, context) => {
      const payload = request.payload;
      if (typeof payload.progress === "number") for (let i = 1; i <= payload.progress; i++) context.progress({ step: i });
      if (typeof payload.throw === "string") throw new Error(payload.throw);
      if (typeof payload.sleep_ms === "number") {
        console.log(`sleeping ${request.message_id}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, payload.sleep_ms as number);
          context.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            console.log(`cancelled ${request.message_id}`);
            resolve();
          });
        });
      }
      return payload;
    });
  },
});
console.log(`ready ${formatAddress(listener.address)}`);
process.on("SIGTERM", async () => {
  await listener.close();
  process.exit(0);
});
