// The Electron side of `npm start` and `npm run dist`: where the Electron binary of
// node_modules/electron is, fetching it when missing (Electron 45 has no postinstall: its
// binary is downloaded by its own install.js), and a better-sqlite3 built for Electron's ABI
// (the one in node_modules is built for this Node, which `serve` and the tests use).
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const electronPackage = (root) => join(root, 'node_modules/electron');

/** The Electron binary, or null when it was never downloaded. */
export function electronBinary(root) {
  const pkg = electronPackage(root);
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile)) return null;
  const bin = join(process.env.ELECTRON_OVERRIDE_DIST_PATH ?? join(pkg, 'dist'), readFileSync(pathFile, 'utf8').trim());
  return existsSync(bin) ? bin : null;
}

/** The Node version Electron's package (and its downloader) asks for, e.g. "22.12.0", or null. */
export function electronNodeRequirement(root) {
  try {
    const engines = JSON.parse(readFileSync(join(electronPackage(root), 'package.json'), 'utf8')).engines?.node ?? '';
    return /(\d+\.\d+\.\d+)/.exec(engines)?.[1] ?? null;
  } catch {
    return null;
  }
}

export function nodeAtLeast(version, current = process.versions.node) {
  const [a, b] = [version, current].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return b[i] > a[i];
  return true;
}

/** Runs `node <script> args` in `cwd`; resolves with its exit code and the last lines it wrote to stderr. */
function runNode(script, args, cwd, env = process.env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err = (err + d).slice(-8192)));
    child.on('error', (e) => resolve({ code: 1, err: e.message }));
    child.on('exit', (code) => resolve({ code: code ?? 1, err }));
  });
}

/** The line of a tool's error output that says what went wrong (not a stack frame, not progress). */
function firstReason(text) {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('at ') && !l.startsWith('^') && !/^node:|^file:|^Node\.js v|^gyp (info|http|WARN)/.test(l));
  // node-gyp spreads its message over "gyp ERR! stack" lines, up to the first stack frame.
  const gyp = [];
  for (const l of lines.filter((l) => l.startsWith('gyp ERR! stack'))) {
    const text = l.replace(/^gyp ERR! stack\s*/, '');
    if (text.startsWith('at ')) break;
    gyp.push(text);
  }
  if (gyp.length) return gyp.join(' ');
  const error = lines.find((l) => /ERR!|Error|error|ENOTFOUND|ECONNREFUSED|EAI_AGAIN|ETIMEDOUT/.test(l));
  return (error ?? lines[0] ?? 'no reason given').replace(/^(prebuild-install (warn|err!?)( install)?)\s*/i, '');
}

/**
 * Makes sure the Electron binary is there, downloading it with Electron's own install.js
 * (which honours ELECTRON_MIRROR and electron_config_cache) when it is not.
 * Resolves with `{ binary }` or `{ reason }`.
 */
export async function ensureElectron(root, log = console.log) {
  const found = electronBinary(root);
  if (found) return { binary: found };
  const pkg = electronPackage(root);
  if (!existsSync(join(pkg, 'install.js'))) return { reason: 'node_modules/electron is not installed (run npm install)' };
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  log(`Downloading Electron ${version} (about 110 MB, once)…`);
  const r = await runNode(join(pkg, 'install.js'), [], pkg);
  const binary = electronBinary(root);
  if (r.code === 0 && binary) {
    log('Electron downloaded.');
    return { binary };
  }
  return { reason: `the Electron download failed (${firstReason(r.err)})` };
}

/**
 * A better-sqlite3 binding for the Electron version in node_modules, kept beside the binary
 * (node_modules/electron/dist is Electron's own, so it goes into node_modules/.tributary).
 * Fetched with better-sqlite3's prebuild-install (which honours
 * `npm_config_better_sqlite3_binary_host`), else compiled with node-gyp against Electron's
 * headers from `headersUrl` (Python 3 and a C++ compiler). Resolves with `{ binding }` or `{ reason }`.
 */
export async function ensureElectronSqlite(root, log = console.log, headersUrl = 'https://electronjs.org/headers') {
  try {
    return await electronSqlite(root, log, headersUrl);
  } catch (e) {
    return { reason: `better-sqlite3 for Electron could not be prepared (${e instanceof Error ? e.message : e})` };
  }
}

async function electronSqlite(root, log, headersUrl) {
  const { version } = JSON.parse(readFileSync(join(electronPackage(root), 'package.json'), 'utf8'));
  const sqlitePkg = realpathSync(join(root, 'node_modules/better-sqlite3'));
  const sqliteVersion = JSON.parse(readFileSync(join(sqlitePkg, 'package.json'), 'utf8')).version;
  const binding = join(root, `node_modules/.tributary/better-sqlite3-${sqliteVersion}-electron-${version}.node`);
  if (existsSync(binding)) return { binding };
  log(`Getting better-sqlite3 ${sqliteVersion} for Electron ${version} (once)…`);
  // A scratch copy: prebuild-install and node-gyp write into the package's build/, which holds
  // the binding this Node uses.
  const work = mkdtempSync(join(tmpdir(), 'tributary-sqlite-'));
  try {
    cpSync(sqlitePkg, work, { recursive: true, filter: (src) => !src.startsWith(join(sqlitePkg, 'build')) });
    const built = join(work, 'build/Release/better_sqlite3.node');
    const reasons = [];
    const prebuild = join(root, 'node_modules/prebuild-install/bin.js');
    if (existsSync(prebuild)) {
      const r = await runNode(prebuild, ['--runtime', 'electron', '--target', version], work);
      if (r.code !== 0 || !existsSync(built)) reasons.push(`prebuilt: ${firstReason(r.err)}`);
    }
    if (!existsSync(built)) {
      const gyp = nodeGyp();
      if (!gyp) reasons.push('node-gyp: not found (it comes with npm)');
      else {
        log('No prebuilt binding; compiling it (needs Python 3 and a C++ compiler)…');
        // A configured nodedir (Node's own headers) would build for Node, not for Electron.
        const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.toLowerCase() !== 'npm_config_nodedir'));
        const r = await runNode(gyp, ['rebuild', '--release', '--runtime=electron', `--target=${version}`, `--dist-url=${headersUrl}`], work, env);
        if (r.code !== 0 || !existsSync(built)) reasons.push(`compiling: ${firstReason(r.err)}`);
      }
    }
    if (!existsSync(built)) return { reason: `better-sqlite3 for Electron could not be fetched or built (${reasons.join('; ')})` };
    mkdirSync(dirname(binding), { recursive: true });
    copyFileSync(built, `${binding}.part`);
    renameSync(`${binding}.part`, binding);
    return { binding };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** npm's own node-gyp (npm start runs under npm, which says where it is). */
function nodeGyp() {
  const npm = process.env.npm_execpath;
  const candidates = npm ? [join(dirname(npm), '../node_modules/node-gyp/bin/node-gyp.js'), join(dirname(npm), 'node_modules/node-gyp/bin/node-gyp.js')] : [];
  return candidates.find((c) => existsSync(c)) ?? null;
}
