/** Prints sqliteBehaviour's report as one JSON line. Usage: `deno run ... sqlite-behaviour-fixture.ts <dir>`. */
import { sqliteBehaviour } from "./sqlite-behaviour.ts";

console.log(JSON.stringify(sqliteBehaviour(process.argv[2]!)));
