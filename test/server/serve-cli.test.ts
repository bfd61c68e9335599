// The two commands (README, "Run it"): `npm start` falls back to headless with a one-line
// explanation where no Electron binary is installed; `serve` prints the UI URL on one line,
// takes --port/--data-dir/--local-folder/--api-key, serves the REST API with that key, and
// stops cleanly on SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';
import { buildIfMissing, ROOT, SERVE_JS } from './built-serve';

let child: ChildProcess | undefined;

beforeAll(buildIfMissing, 180_000);

afterEach(() => {
  // The whole process group: `npm start` runs serve as its own child.
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  child = undefined;
});

/** Starts a command and resolves with everything it printed up to the URL line. */
function launch(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ url: string; output: string }> {
  child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (d: Buffer) => {
      output += d;
      const m = /Tributary is running at (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)\n/.exec(output);
      if (m) resolve({ url: m[1], output });
    };
    child!.stdout!.on('data', onData);
    child!.stderr!.on('data', (d) => (output += d));
    child!.once('exit', (code) => reject(new Error(`exited ${code} before printing its URL:\n${output}`)));
  });
}

describe('serve and start', () => {
  it('serve: one URL line, the first-run local account, the REST API with --api-key, clean SIGTERM', async () => {
    const dataDir = scratchDir('serve');
    const folder = scratchDir('serve-local');
    writeFileSync(join(folder, 'hello.txt'), 'hi');
    const key = 'cli-key-0123456789abcdef';
    const { url } = await launch([SERVE_JS, '--port', '0', '--data-dir', dataDir, '--local-folder', folder, '--api-key', key]);
    const base = new URL(url).origin;

    const page = await request(url);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    await page.body.dump();

    const accounts = await request(`${base}/v1/accounts`, { headers: { authorization: `APIKey ${key}` } });
    expect(accounts.statusCode).toBe(200);
    const body = (await accounts.body.json()) as { objects: { service: string }[] };
    expect(body.objects.map((a) => a.service)).toEqual(['local']);
    const unauthorised = await request(`${base}/v1/accounts`, { headers: { authorization: 'APIKey wrong-key-0123456789' } });
    expect(unauthorised.statusCode).toBe(401);
    await unauthorised.body.dump();

    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child!.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('serve: refuses a bad --port with a clear message and a non-zero exit', () => {
    const r = spawnSync(process.execPath, [SERVE_JS, '--port', 'eighty'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--port must be 0–65535');
  });

  it('serve keys: create prints the secret once, list shows it, revoke deactivates it (spec 1, Authentication: keys by CLI)', () => {
    const dataDir = scratchDir('keys');
    const cli = (...args: string[]) => spawnSync(process.execPath, [SERVE_JS, 'keys', ...args, '--data-dir', dataDir], { encoding: 'utf8' });
    const created = cli('create', 'deploy script');
    expect(created.status).toBe(0);
    const secret = created.stdout.trim().split('\n').at(-1)!;
    expect(secret).toMatch(/^trb_[\w-]{20,}$/);
    expect(cli('list').stdout).toMatch(new RegExp(`^1\tactive \t${secret.slice(0, 8)}…\tdeploy script`, 'm'));
    expect(cli('list').stdout).not.toContain(secret); // the secret is never listed
    expect(cli('revoke', '1').status).toBe(0);
    expect(cli('list').stdout).toMatch(/^1\trevoked/m);
    const bad = cli('frobnicate');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('usage: serve keys');
  });

  it('serve ui-token rotate: a new web UI token each time, which the next serve prints (docs/security.md, The web UI token)', async () => {
    const dataDir = scratchDir('ui-token-cli');
    const rotate = () => spawnSync(process.execPath, [SERVE_JS, 'ui-token', 'rotate', '--data-dir', dataDir], { encoding: 'utf8' });
    const first = rotate();
    expect(first.status).toBe(0);
    const a = first.stdout.trim().split('\n').at(-1)!;
    const b = rotate().stdout.trim().split('\n').at(-1)!;
    expect(a).toMatch(/^[\w-]{32}$/);
    expect(b).toMatch(/^[\w-]{32}$/);
    expect(b).not.toBe(a);
    const { url } = await launch([SERVE_JS, '--port', '0', '--data-dir', dataDir, '--local-folder', scratchDir('ui-token-cli-local')]);
    expect(new URL(url).searchParams.get('token')).toBe(b);
    const bad = spawnSync(process.execPath, [SERVE_JS, 'ui-token', 'show', '--data-dir', dataDir], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('usage: serve ui-token rotate');
  });

  it('npm start where no Electron binary can be had says why and runs headless', async () => {
    const { output } = await launch([join(ROOT, 'scripts/start.mjs'), '--port', '0', '--data-dir', scratchDir('start'), '--local-folder', scratchDir('start-local')], {
      ELECTRON_OVERRIDE_DIST_PATH: scratchDir('no-electron'),
    });
    const lines = output.split('\n').filter((l) => l.includes('Electron'));
    // The download (no network here) fails; the last word is why, and where to go instead.
    expect(lines.at(-1)).toMatch(/^Tributary runs headless because .+: open the URL below in your browser\.$/);
  });
});
