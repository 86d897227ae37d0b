/**
 * The echo peer of `hermes-mesh demo`, run as its own process: answers every request with its
 * payload, sending `{ step }` progress first when asked with `{ progress: n }`.
 * Argv: <socket path>. Prints "ready" once listening.
 */
import { RequestChannel } from "../../mesh/request-channel.ts";
import { listen } from "../../mesh/transport.ts";

const listener = await listen({ path: process.argv[2]! }, {
  node: "echo",
  onConnection: (connection) =>
    new RequestChannel(connection, "echo", (request, context) => {
      const steps = Number(request.payload.progress ?? 0);
      for (let step = 1; step <= steps; step++) context.progress({ step });
      return request.payload;
    }),
});
console.log("ready");
const stop = async () => {
  await listener.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
