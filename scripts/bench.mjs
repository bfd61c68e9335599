#!/usr/bin/env node
// `npm run bench [name…]`: runs test/bench/*.bench.ts (all, or those whose names contain one
// of the arguments) one after another; each prints its own figures and ratios against the
// peer tool it measures. Sizes are set by environment variables documented in each script.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const filters = process.argv.slice(2);
const benches = readdirSync(join(root, 'test/bench'))
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
let failed = 0;
for (const file of benches) {
  console.log(`\n=== ${file}`);
  const r = spawnSync(process.execPath, [join(root, 'scripts/run-ts.mjs'), join('test/bench', file)], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
