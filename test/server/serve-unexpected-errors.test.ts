// What `serve` does with an error no code caught (README, "Run it"): a promise rejected with
// nobody waiting is logged and the server keeps answering; an uncaught exception is logged with
// its stack, then the server and the database are closed as on SIGTERM and the process exits
// with a non-zero code. The errors are raised inside the real server by a script loaded with
// `node --import`, on a line written to its stdin.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { request } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';
import { buildIfMissing, ROOT, SERVE_JS } from './built-serve';

let child: ChildProcess | undefined;

const RAISE = `
process.stdin.setEncoding('utf8').on('data', (line) => {
  if (line.includes('reject')) Promise.reject(new Error('a rejection nobody awaited'));
  if (line.includes('throw')) setTimeout(() => { throw new Error('boom from a timer'); });
});
`;

beforeAll(buildIfMissing, 180_000);

afterEach(() => {
  if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  child = undefined;
});

/** Starts `serve` with the script above loaded; resolves with its origin once it listens. */
function launch(dataDir: string) {
  const script = join(scratchDir('raise'), 'raise.mjs');
  writeFileSync(script, RAISE);
  const args = ['--import', pathToFileURL(script).href, SERVE_JS, '--port', '0', '--data-dir', dataDir, '--local-folder', scratchDir('unexpected-local')];
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  child = proc;
  const out = { stdout: '', stderr: '' };
  proc.stdout!.on('data', (d) => (out.stdout += d));
  proc.stderr!.on('data', (d) => (out.stderr += d));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const started = new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', () => {
      const m = /Tributary is running at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out.stdout);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`exited ${code} before printing its URL:\n${out.stdout}${out.stderr}`)));
  });
  return { proc, out, exited, started };
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !check(); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('serve: unexpected errors', () => {
  it('an unhandled promise rejection is logged with its stack and the server keeps answering', async () => {
    const { proc, out, started } = launch(scratchDir('unexpected-rejection'));
    const origin = await started;
    proc.stdin!.write('reject\n');
    await until('the rejection on stderr', () => out.stderr.includes('a rejection nobody awaited'));

    const page = await request(`${origin}/v1/accounts`);
    expect(page.statusCode).toBe(401); // answered: no key was given
    await page.body.dump();
    expect(proc.exitCode).toBeNull();
    expect(out.stderr).toMatch(/unhandled promise rejection.*a rejection nobody awaited\n\s+at /i);
  });

  it('an uncaught exception is logged, the server and the database are closed, and the exit code is non-zero', async () => {
    const dataDir = scratchDir('unexpected-exception');
    const { proc, out, exited, started } = launch(dataDir);
    await started;
    // The database is open in WAL mode; only a clean close folds the log back and removes it.
    expect(existsSync(join(dataDir, 'tributary.db-wal'))).toBe(true);
    proc.stdin!.write('throw\n');

    expect(await exited).toBe(1);
    expect(out.stderr).toMatch(/boom from a timer\n\s+at /);
    expect(existsSync(join(dataDir, 'tributary.db-wal'))).toBe(false);
    expect(out.stdout).toContain('Uncaught exception, shutting down.');
  });
});
