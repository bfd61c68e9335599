#!/usr/bin/env node
// `npm test`: builds the app (the end-to-end tests drive the built web UI in Chromium), runs
// the type checker, then every vitest test, and closes with one plain summary line.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' };
const step = (name, cmd, args) => {
  console.log(`\n▶ ${name}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  return r.status ?? 1;
};
const bin = (name) => join(root, 'node_modules/.bin', name);

if (step('build', bin('electron-vite'), ['build']) !== 0) process.exit(1);
if (step('typecheck', bin('tsc'), ['-b']) !== 0) process.exit(1);

mkdirSync(join(root, 'test-results'), { recursive: true });
const report = join(root, 'test-results/vitest.json');
const status = step('tests', bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)]);
if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  console.log(`\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
}
process.exit(status);
