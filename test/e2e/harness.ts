/**
 * What every end-to-end test shares: the built app started as the user starts it (`serve`),
 * Debian's Chromium launched with the flags this machine needs (notes/test-servers.md §10),
 * and the OS-style file drop.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const ROOT = join(import.meta.dirname, '../..');
export const RESULTS = join(ROOT, 'test-results');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds once when the bundle is missing or older than its sources (npm test builds first anyway). */
export function ensureBuilt(): void {
  const html = join(ROOT, 'out/renderer/index.html');
  const serve = join(ROOT, 'out/main/serve.js');
  const sources = Math.max(newestMtime(join(ROOT, 'src-renderer')), newestMtime(join(ROOT, 'src-main')));
  const stale = !existsSync(html) || !existsSync(serve) || Math.min(statSync(html).mtimeMs, statSync(serve).mtimeMs) < sources;
  if (!stale) return;
  const r = spawnSync(join(ROOT, 'node_modules/.bin/electron-vite'), ['build'], { cwd: ROOT, env: { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`electron-vite build failed:\n${r.stdout}\n${r.stderr}`);
}

/** `serve` as the user runs it; resolves with the printed UI URL. */
export function startServe(dataDir: string, localFolder: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'out/main/serve.js'), '--port', '0', '--data-dir', dataDir, '--local-folder', localFolder], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      // No caller will ever stop it: do not leave it running.
      child.kill('SIGTERM');
      reject(new Error(`serve printed no URL within 20 s. stderr:\n${stderr}`));
    }, 20_000);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}. stderr:\n${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /Tributary is running at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
  });
}

export const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

/**
 * Points XDG_DATA_HOME (where a local account's trash goes, freedesktop spec) at a scratch folder
 * instead of the machine's; `restore` puts the variable back and removes the folder.
 */
export function scratchDataHome(label: string): { dir: string; restore(): void } {
  const previous = process.env.XDG_DATA_HOME;
  const dir = mkdtempSync(join(tmpdir(), `tributary-e2e-${label}-xdg-`));
  process.env.XDG_DATA_HOME = dir;
  const restore = () => {
    if (previous === undefined) delete process.env.XDG_DATA_HOME;
    else process.env.XDG_DATA_HOME = previous;
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, restore };
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium).`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/**
 * Chromium with a profile on disk (`userDataDir`): what installing a web app needs, as
 * Chromium never installs from an incognito-like context.
 */
export async function launchChromiumProfile(userDataDir: string): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium).`);
  return chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 } });
}

/** Same formatting rule as the UI (components/format.ts), for the size we expect to see. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['B', 'KB', 'MB', 'GB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

/** Drops a file onto an element the way the OS does: dragenter, dragover, drop, one DataTransfer. */
export async function dropFile(page: Page, selector: string, name: string, bytes: Buffer): Promise<void> {
  const dataTransfer = await page.evaluateHandle(
    ({ name, b64 }) => {
      const dt = new DataTransfer();
      const bin = atob(b64);
      const data = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) data[i] = bin.charCodeAt(i);
      dt.items.add(new File([data], name, { type: 'application/octet-stream' }));
      return dt;
    },
    { name, b64: bytes.toString('base64') },
  );
  for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent(selector, type, { dataTransfer });
  await dataTransfer.dispose();
}

export interface OpenApp {
  url: string;
  /** The app's data folder (database, keys, connectors' state). */
  dataDir: string;
  /** The folder of the first-run local account. */
  localFolder: string;
  browser: Browser;
  page: Page;
  /** The page's uncaught errors and console errors, but for the message frame's refused inline styles (docs/ui.md, "Message HTML"). */
  pageErrors: string[];
  close(): Promise<void>;
}

/**
 * The app as a user first sees it: `serve` on a fresh data folder and local folder, Chromium
 * on the printed URL, the first listing painted.
 */
export async function openApp(label: string, options: { context?: BrowserContextOptions; onPage?: (page: Page) => void } = {}): Promise<OpenApp> {
  ensureBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), `tributary-e2e-${label}-`));
  const local = mkdtempSync(join(tmpdir(), `tributary-e2e-${label}-local-`));
  const serve = await startServe(dataDir, local);
  const browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options.context })).newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    // The message frame inherits the window's CSP, which may refuse a message's inline styles;
    // html-safety.e2e covers the frame.
    if (m.location().url === 'about:srcdoc' && m.text().startsWith('Applying inline style violates')) return;
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  // Before the first load, so a listener sees everything.
  options.onPage?.(page);
  await page.goto(serve.url);
  await page.getByTestId('file-list').waitFor();
  return {
    url: serve.url,
    dataDir,
    localFolder: local,
    browser,
    page,
    pageErrors,
    async close() {
      await browser.close();
      await stopChild(serve.child);
      for (const d of [dataDir, local]) rmSync(d, { recursive: true, force: true });
    },
  };
}
