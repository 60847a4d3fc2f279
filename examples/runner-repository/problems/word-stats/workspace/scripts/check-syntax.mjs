// The offline stand-in for `tsc --noEmit`: `node --check` on every .js/.mjs file under the given folders.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function* files(folder) {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (/\.m?js$/.test(name)) yield path;
  }
}

let failed = 0;
for (const folder of process.argv.slice(2)) {
  for (const file of files(folder)) {
    const result = spawnSync(process.execPath, ['--check', file], { stdio: 'inherit' });
    if (result.status !== 0) failed += 1;
  }
}
process.exit(failed ? 1 : 0);
