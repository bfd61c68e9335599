#!/usr/bin/env node
/**
 * `npm run dist [-- electron-builder options]`: installers for this platform (AppImage and deb
 * on Linux, dmg on macOS, NSIS on Windows; package.json "build" holds the configuration).
 *
 * It needs what only a machine with network access has: the Electron binary (installers wrap
 * it), Electron's headers to rebuild better-sqlite3 for Electron, and electron-builder's own
 * downloads. So it checks first and says what is missing. electron-builder runs through
 * `npx --yes` at a pinned version instead of being a devDependency: it adds 279 packages that
 * every `npm ci` (tests, CI) would install for nothing.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { electronBinary } from './electron-binary.mjs';

export const ELECTRON_BUILDER = 'electron-builder@26.17.0';
/** Electron 45 and @electron/rebuild 4 (which electron-builder uses) need this Node. */
const NODE_NEEDED = [22, 12];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

/** Everything missing, all at once: a machine without Electron usually lacks a newer Node too. */
const missing = [];
if (!electronBinary(root)) {
  missing.push(
    '- No Electron binary is installed (node_modules/electron has no dist/ with the executable).',
    '  Installers wrap the Electron runtime; electron-builder also downloads Electron for the',
    '  target platform and the headers to rebuild better-sqlite3, so this needs a machine that',
    '  can reach github.com and the npm registry. There, run:',
    '    node node_modules/electron/install.js     # fetches the Electron binary',
    '    npm run dist',
  );
}
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < NODE_NEEDED[0] || (major === NODE_NEEDED[0] && minor < NODE_NEEDED[1])) {
  missing.push(`- Node ${NODE_NEEDED.join('.')} or newer is needed (this is ${process.versions.node}): Electron 45 and electron-builder's native rebuild require it.`);
}
if (missing.length) {
  console.error(['npm run dist: cannot build installers here.', ...missing, 'README.md, "Installers", lists the toolchain each platform needs.'].join('\n'));
  process.exit(1);
}

const run = (command, args) => spawnSync(command, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' }).status ?? 1;

console.log('Building Tributary…');
if (run(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build']) !== 0) process.exit(1);
console.log(`Packaging with ${ELECTRON_BUILDER} (fetched by npx on first use)…`);
process.exit(run(npx, ['--yes', ELECTRON_BUILDER, '--publish', 'never', ...process.argv.slice(2)]));
