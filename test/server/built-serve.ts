/** The built headless entry the process tests run, built first where a checkout has no build yet. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '../..');
export const SERVE_JS = join(ROOT, 'out/main/serve.js');

/** `electron-vite build` unless out/ holds a build (`npm test` builds before it runs). */
export function buildIfMissing(): void {
  if (existsSync(SERVE_JS)) return;
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}`);
}
