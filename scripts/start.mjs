#!/usr/bin/env node
// `npm start`: the desktop app, fetching the Electron binary (and a better-sqlite3 built for
// Electron) on first run; headless mode with the same web UI when that cannot be done, saying
// why (`npm run serve` always runs headless). Builds first when sources are newer than the build.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { electronNodeRequirement, ensureElectron, ensureElectronSqlite, nodeAtLeast } from './electron-binary.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const headless = args[0] === '--headless';
const passThrough = headless ? args.slice(1) : args;

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

function ensureBuilt() {
  const built = join(root, 'out/main/serve.js');
  const sources = Math.max(...['src-main', 'src-renderer', 'src-preload'].map((d) => newest(join(root, d))));
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  console.log('Building Tributary…');
  const r = spawnSync(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/** Everything the desktop app needs, fetched when missing: `{ binary, binding }` or `{ reason }`. */
async function desktop() {
  const needed = electronNodeRequirement(root);
  if (needed && !nodeAtLeast(needed)) {
    console.log(`Electron asks for Node ${needed} or newer to install; this is Node ${process.versions.node}. Trying anyway.`);
  }
  const electron = await ensureElectron(root);
  if (!electron.binary) return electron;
  const sqlite = await ensureElectronSqlite(root);
  return sqlite.binding ? { binary: electron.binary, binding: sqlite.binding } : sqlite;
}

ensureBuilt();
const app = headless ? null : await desktop();
const child = app?.binary
  ? spawn(app.binary, [root, ...passThrough], { stdio: 'inherit', env: { ...process.env, TRIBUTARY_SQLITE_BINDING: app.binding } })
  : (app && console.log(`Tributary runs headless because ${app.reason}: open the URL below in your browser.`),
    spawn(process.execPath, [join(root, 'out/main/serve.js'), ...passThrough], { stdio: 'inherit' }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 0));
