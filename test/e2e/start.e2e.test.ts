/**
 * `npm start` as a user without network access runs it: the Electron binary is missing, the
 * download is tried and fails, and Tributary runs headless saying why. A second start while
 * the default port is taken moves to a free port; a port the user chose that is taken is
 * refused with how to choose another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PORT } from '../../src-main/cli-options';
// The start script's helpers, plain JavaScript run by Node itself.
// @ts-expect-error no declarations for a .mjs script
import { ensureElectronSqlite } from '../../scripts/electron-binary.mjs';
import { freePort } from '../servers/util';
import { ensureBuilt, ROOT, stopChild } from './harness';

let dir: string;
let appRoot: string;
let blocker: Server | undefined;
const children: ChildProcess[] = [];

/**
 * A copy of the app whose node_modules/electron has no binary (the package as npm installs
 * it), everything else linked to this checkout.
 */
function appWithoutElectronBinary(): string {
  const root = join(dir, 'app');
  mkdirSync(join(root, 'scripts'), { recursive: true });
  for (const f of ['start.mjs', 'electron-binary.mjs']) copyFileSync(join(ROOT, 'scripts', f), join(root, 'scripts', f));
  for (const d of ['src-main', 'src-renderer', 'src-preload', 'out']) symlinkSync(join(ROOT, d), join(root, d));
  const modules = join(root, 'node_modules');
  mkdirSync(join(modules, 'electron'), { recursive: true });
  for (const e of readdirSync(join(ROOT, 'node_modules'))) if (e !== 'electron') symlinkSync(join(ROOT, 'node_modules', e), join(modules, e));
  for (const f of ['package.json', 'install.js', 'index.js', 'cli.js', 'checksums.json']) copyFileSync(join(ROOT, 'node_modules/electron', f), join(modules, 'electron', f));
  return root;
}

/** Runs a command; resolves with everything it printed once `until` matches a line (or it exits). */
function run(args: string[], env: NodeJS.ProcessEnv, until: RegExp): Promise<{ child: ChildProcess; lines: string[]; code: number | null }> {
  const childEnv = { ...process.env, ...env };
  delete childEnv.TRIBUTARY_PORT; // the default port, as a user's first `npm start` has it
  const child = spawn(process.execPath, args, { cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line matching ${until} within 60 s:\n${lines.join('\n')}`)), 60_000);
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (until.test(line)) {
          clearTimeout(timer);
          resolve({ child, lines, code: null });
        }
      });
    }
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ child, lines, code });
    });
  });
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tributary-start-'));
  appRoot = appWithoutElectronBinary();
  // The default port, taken as by a first Tributary (if something else already has it, it is taken all the same).
  blocker = await new Promise<Server | undefined>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen(DEFAULT_PORT, '127.0.0.1', () => resolve(s));
  });
});

afterAll(async () => {
  await Promise.all(children.map(stopChild));
  await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('npm start without an Electron binary and without network', () => {
  it('tries the download, says so, and runs headless with the reason on another port than the taken default one', async () => {
    const closed = await freePort(); // nothing listens here: the download is refused
    const env = {
      ELECTRON_MIRROR: `http://127.0.0.1:${closed}/`,
      electron_config_cache: join(dir, 'electron-cache'),
    };
    const { lines, code } = await run(
      [join(appRoot, 'scripts/start.mjs'), '--data-dir', join(dir, 'data'), '--local-folder', join(dir, 'files')],
      env,
      /Tributary is running at /,
    );
    expect(code, lines.join('\n')).toBeNull();
    const text = lines.join('\n');
    expect(text).toMatch(/Downloading Electron 45\.\d+\.\d+ \(about 110 MB, once\)…/);
    expect(text).toMatch(/Tributary runs headless because the Electron download failed \(.*fetch failed.*\): open the URL below in your browser\./);
    expect(text).toContain(`Port ${DEFAULT_PORT} is in use (is Tributary already running?), so this one uses another port.`);
    const url = /Tributary is running at (http:\/\/127\.0\.0\.1:(\d+)\/\?token=\S+)/.exec(text)!;
    expect(Number(url[2])).not.toBe(DEFAULT_PORT);
    // The download order is: announce, try, and only then fall back.
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(at(/Downloading Electron/)).toBeLessThan(at(/runs headless because/));
    // Nothing half-installed is left behind as if it were a binary.
    expect(existsSync(join(appRoot, 'node_modules/electron/path.txt'))).toBe(false);
    const page = await fetch(url[1]);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');
  });

  it('says why better-sqlite3 for Electron could not be had, prebuilt or compiled, and writes nothing', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const env = { ...process.env };
    process.env.npm_config_better_sqlite3_binary_host = closed;
    const said: string[] = [];
    try {
      const r = (await ensureElectronSqlite(appRoot, (l: string) => said.push(l), `${closed}/headers`)) as { binding?: string; reason?: string };
      expect(r.binding).toBeUndefined();
      expect(r.reason).toMatch(/^better-sqlite3 for Electron could not be fetched or built \(prebuilt: .*ECONNREFUSED.*; compiling: /);
    } finally {
      process.env = env;
    }
    expect(said[0]).toMatch(/^Getting better-sqlite3 \d+\.\d+\.\d+ for Electron 45\.\d+\.\d+ \(once\)…$/);
    expect(existsSync(join(appRoot, 'node_modules/.tributary'))).toBe(false);
  });

  it('refuses a chosen port that is taken, saying how to pick another', async () => {
    const taken = await freePort();
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(taken, '127.0.0.1', () => resolve()));
    try {
      const { lines, code } = await run(
        [join(ROOT, 'out/main/serve.js'), '--port', String(taken), '--data-dir', join(dir, 'data2'), '--local-folder', join(dir, 'files2')],
        {},
        /^(?!)/,
      );
      expect(code).toBe(1);
      expect(lines.join('\n')).toContain(`Tributary could not start: port ${taken} is in use (is Tributary already running?). Choose another with --port N, or --port 0 for any free port.`);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
