/**
 * A mesh member in its own process, which test/mesh/socket-group.test.ts runs as another Unix
 * user. Runtime-neutral (the `dial` mode also runs on Deno).
 *
 * Argv:
 * - `client <dir>`: connectMesh (the token from HERMES_MESH_TOKEN), one request to the echo
 *   actor, then `joined {"reply":…,"socket":…}` (the client's own socket), and it stays joined
 *   until its stdin closes.
 * - `dial <socket path>`: dials the socket with this runtime's socket adapter (Bun's; node:net
 *   with HERMES_SOCKET_RUNTIME=node or on Deno) and prints `connected`.
 *
 * A failure prints `failed {"code":…,"message":…,"fields":…}` and exits 1.
 */
import process from "node:process";
import { clientSocketPath } from "../../mesh/control-protocol.ts";
import { dial } from "../../mesh/socket-transport.ts";

const [mode, target] = process.argv.slice(2);

try {
  if (mode === "client") {
    const { connectMesh } = await import("../../src/actor/connect-mesh.ts");
    const mesh = await connectMesh({ dir: target!, name: "member", token: process.env.HERMES_MESH_TOKEN || undefined });
    const reply = await mesh.request("echo", { text: "from another user" }, { timeoutMs: 10_000 });
    console.log(`joined ${JSON.stringify({ reply: reply.payload, socket: clientSocketPath(target!, mesh.address) })}`);
    for await (const _ of process.stdin) {
      // Stays joined until the test closes stdin.
    }
    await mesh.close();
  } else if (mode === "dial") {
    const connection = await dial({ path: target! }, { node: "probe" });
    console.log("connected");
    await connection.close();
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  process.exit(0);
} catch (error) {
  const e = error as { code?: unknown; message?: string; fields?: unknown };
  console.log(`failed ${JSON.stringify({ code: e.code, message: e.message, fields: e.fields })}`);
  process.exit(1);
}
