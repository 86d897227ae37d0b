/** A client script as a user writes one: connect, one request, close. Argv: <mesh dir>. */
import { connectMesh } from "../../src/index.ts";

const mesh = await connectMesh({ dir: process.argv[2]! });
const reply = await mesh.request("echo", { hello: "exit" }, { timeoutMs: 5000 });
await mesh.close();
console.log(`closed ${JSON.stringify(reply.payload)} ${Date.now()}`);
