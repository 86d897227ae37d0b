/**
 * Child process of the file tool race test: swaps the directory `<dir>` for a symlink to
 * `<target>` and back, in a tight loop, until killed. Prints "ready" once the loop runs, and
 * keeps the real directory at `<dir>.real` while the symlink is in place. A directory that
 * file_write created in the moment `<dir>` was missing is moved aside to `<dir>.made-<n>`.
 *
 * Usage: bun symlink-swap-fixture.ts <dir> <target>
 */
import { renameSync, symlinkSync } from "node:fs";

const [dir, target] = process.argv.slice(2);
if (!dir || !target) throw new Error("usage: symlink-swap-fixture.ts <dir> <target>");
const parked = `${dir}.real`;
const link = `${dir}.link`;
symlinkSync(target, link);

let swaps = 0;
let made = 0;
/** rename(from, dir), moving aside a directory that appeared at `dir` meanwhile. */
function renameOnto(from: string): void {
  for (;;) {
    try {
      return renameSync(from, dir!);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      renameSync(dir!, `${dir}.made-${++made}`);
    }
  }
}
for (;;) {
  renameSync(dir, parked);
  renameOnto(link); // the symlink takes the directory's name
  renameSync(dir, link);
  renameOnto(parked); // the directory is back
  if (++swaps === 100) console.log("ready");
}
