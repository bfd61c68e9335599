/**
 * Shared plumbing for the real servers the tests start on loopback: free ports (never fixed
 * ones, so parallel runs cannot collide), readiness by TCP connect, scratch folders, child
 * processes that die with the test run, and a check that a system binary is installed.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function waitPort(port: number, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Nothing listened on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

export async function waitPortClosed(port: number, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (!open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Port ${port} still open after ${timeoutMs} ms`);
}

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `tributary-${prefix}-`));
}

/** A child process that is killed when the test process exits, whatever the reason. */
export function spawnServer(cmd: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  return child;
}

/** Runs a command to completion; throws with its output on failure. */
export function run(cmd: string, args: string[], options: { input?: string; cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input: options.input, cwd: options.cwd });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** True when a system binary the real-server tests need is installed (see .ci/run). */
export function hasBinary(path: string): boolean {
  return existsSync(path);
}

/** Resolves with what `probe` gives once it is neither undefined nor false; fails after `timeoutMs`. */
export async function until<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const REPO = join(import.meta.dirname, '..', '..');

/**
 * Runs a TypeScript script of the repo in a child Node to its end; with `killWhen`, SIGKILLs it
 * once that says so (asked every `pollMs` with the output so far). Rejects when the child fails
 * by itself.
 */
export function runTsChild(
  script: string,
  args: string[],
  options: { env?: Record<string, string>; killWhen?: (out: string) => Promise<boolean> | boolean; pollMs?: number } = {},
): Promise<{ out: string; killed: boolean }> {
  const { killWhen, pollMs = 50 } = options;
  const c = spawn(process.execPath, [join(REPO, 'scripts/run-ts.mjs'), script, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  const kill = () => c.kill('SIGKILL');
  process.once('exit', kill);
  let out = '';
  let err = '';
  c.stdout!.on('data', (d) => (out += d));
  c.stderr!.on('data', (d) => (err += d));
  let killed = false;
  let timer: NodeJS.Timeout | undefined;
  if (killWhen) {
    const poll = async () => {
      if (c.exitCode !== null) return;
      if (await Promise.resolve(killWhen(out)).catch(() => false)) {
        killed = c.kill('SIGKILL');
        return;
      }
      timer = setTimeout(poll, pollMs);
    };
    timer = setTimeout(poll, pollMs);
  }
  return new Promise((resolve, reject) => {
    c.once('exit', (code) => {
      clearTimeout(timer);
      process.off('exit', kill);
      if (killed || code === 0) resolve({ out, killed });
      else reject(new Error(`child exited ${code}: ${err}`));
    });
  });
}

/** This process's file descriptors open on `path` (Linux's /proc): a file read or written and not let go. */
export function openOn(path: string): string[] {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false; // closed meanwhile
    }
  });
}
