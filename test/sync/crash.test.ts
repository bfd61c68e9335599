// Two-way sync, "a crash mid-run" end to end (docs/sync.md, *Crashes*): the engine is SIGKILLed
// twice while it uploads and downloads (local folder ↔ Apache WebDAV, ↔ OpenSSH SFTP, ↔ S3 on
// moto), restarted on the same database each time, and must end in step with nothing lost,
// nothing duplicated and no conflict copies. A kill in the middle of a write leaves a temporary
// file on the side written to; the next start removes it.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startApache } from '../servers/apache';
import { startMoto } from '../servers/s3';
import { startSshd } from '../servers/sshd';
import { scratchDir } from '../servers/util';
import { localView, remoteView, sorted, trashContents } from './scenario';

const ROOT = join(import.meta.dirname, '..', '..');

/** Runs the child; with `watch`, SIGKILLs it once `watch` says so (checked after its journal is resumed). */
function child(args: string[], watch?: () => Promise<boolean> | boolean, env: Record<string, string> = {}): Promise<{ out: string; killed: boolean }> {
  const c = spawn(process.execPath, [join(ROOT, 'scripts/run-ts.mjs'), 'test/sync/crash-child.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const kill = () => c.kill('SIGKILL');
  process.once('exit', kill);
  let out = '';
  let err = '';
  c.stdout!.on('data', (d) => (out += d));
  c.stderr!.on('data', (d) => (err += d));
  let killed = false;
  let timer: NodeJS.Timeout | undefined;
  if (watch) {
    const poll = async () => {
      if (c.exitCode !== null) return;
      if (out.includes('JOURNAL') && (await Promise.resolve(watch()).catch(() => false))) {
        killed = c.kill('SIGKILL');
        return;
      }
      timer = setTimeout(poll, 20);
    };
    timer = setTimeout(poll, 20);
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

/** Tributary's temporary files below a folder of this computer (paths relative to it). */
function temps(root: string, rel = ''): string[] {
  if (!existsSync(join(root, rel))) return [];
  return readdirSync(join(root, rel)).flatMap((name) => {
    const p = `${rel}/${name}`;
    if (statSync(join(root, p)).isDirectory()) return temps(root, p);
    return name.startsWith('.tributary-') ? [p] : [];
  });
}

interface Backend {
  service: string;
  options: Record<string, unknown>;
  /** The remote account's folder on this computer, where the server keeps one. */
  disk?: string;
  stop(): Promise<void>;
}

const backends: [string, () => Promise<Backend>][] = [
  [
    'Apache WebDAV',
    async () => {
      const s = await startApache();
      return { service: 'webdav', options: { protocol: 'http', host: s.host, port: s.port, path: '/', username: s.user, password: s.password }, stop: () => s.stop() };
    },
  ],
  [
    'OpenSSH SFTP',
    async () => {
      const s = await startSshd();
      return { service: 'sftp', options: { host: s.host, port: s.port, username: s.username, password: s.password, root: s.dataDir, hostKeyFingerprint: s.hostKeyFingerprint }, disk: s.dataDir, stop: () => s.stop() };
    },
  ],
  [
    'S3 on moto',
    async () => {
      const s = await startMoto();
      return { service: 's3', options: s.options, stop: () => s.stop() };
    },
  ],
];

/** Starts the backend, a connector to it, and a scratch folder; runs `body`; stops everything. */
async function withBackend(start: () => Promise<Backend>, body: (b: Backend, remote: StorageConnector, dir: string) => Promise<void>): Promise<void> {
  await loadConnectors();
  const dir = scratchDir('sync-crash');
  const b = await start();
  const def = connectorDefinition(b.service);
  const remote = (await def.create(parseOptions(def, b.options), { dataDir: dir, accountId: 1 })) as StorageConnector;
  try {
    await body(b, remote, dir);
  } finally {
    await remote.close();
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const body = (i: number) => `file ${i} `.repeat(4000);

describe.each(backends)('sync engine: SIGKILL mid-run (local ↔ %s)', (_name, start) => {
  it('resumes after SIGKILL without loss, duplicates or conflicts', () =>
    withBackend(start, async (b, remote, dir) => {
      const localRoot = join(dir, 'local');
      const trash = join(dir, 'trash');
      mkdirSync(join(localRoot, 'docs'), { recursive: true });
      await remote.mkdir('/Sync');
      await remote.mkdir('/Sync/remote');
      for (let i = 0; i < 60; i++) writeFileSync(join(localRoot, 'docs', `l${i}.txt`), body(i));
      for (let i = 0; i < 20; i++) await remote.write(`/Sync/remote/r${i}.txt`, Readable.from([Buffer.from(body(1000 + i))]));
      const args = [join(dir, 'sync.db'), localRoot, trash, b.service, JSON.stringify(b.options)];
      const uploaded = async () => (await remote.list('/Sync/docs').catch(() => [])).length;

      const first = await child(args, async () => (await uploaded()) >= 15);
      expect(first.killed).toBe(true);
      const second = await child(args, async () => (await uploaded()) >= 40);
      const third = await child(args);
      expect(third.out).toContain('DONE idle');
      console.log(`sync crash test (${b.service}): killed ${[first, second].filter((r) => r.killed).length} times; journal at restarts: ${[second.out, third.out].map((o) => /JOURNAL (\d+)/.exec(o)?.[1]).join(', ')}`);

      const l = localView(localRoot);
      const r = await remoteView(remote, '/Sync');
      expect(sorted(r)).toEqual(sorted(l));
      expect([...l.keys()].filter((p) => p.includes('conflict'))).toEqual([]);
      expect([...l.keys()].filter((p) => p.endsWith('.txt'))).toHaveLength(80);
      for (let i = 0; i < 60; i++) expect(l.get(`/docs/l${i}.txt`)).toBe(body(i));
      for (let i = 0; i < 20; i++) expect(l.get(`/remote/r${i}.txt`)).toBe(body(1000 + i));
      expect(trashContents(trash)).toEqual([]);
      if (b.disk) expect(temps(join(b.disk, 'Sync'))).toEqual([]);
    }), 300_000);
});

// SFTP is the backend where a killed upload leaves its temporary file on the server too
// (Apache drops an unfinished PUT; an S3 PUT is all or nothing).
describe('sync engine: SIGKILL in the middle of a write (local ↔ OpenSSH SFTP)', () => {
  it('removes the temporary files its killed writes left, on both sides, at the next start', () =>
    withBackend(backends[1][1], async (b, remote, dir) => {
      const localRoot = join(dir, 'local');
      const trash = join(dir, 'trash');
      const disk = join(b.disk!, 'Sync');
      mkdirSync(join(localRoot, 'docs'), { recursive: true });
      await remote.mkdir('/Sync');
      await remote.mkdir('/Sync/remote');
      for (let i = 0; i < 4; i++) await remote.write(`/Sync/remote/r${i}.txt`, Readable.from([Buffer.from(body(1000 + i))]));
      const args = [join(dir, 'sync.db'), localRoot, trash, b.service, JSON.stringify(b.options)];

      // Killed while a download is half written into its temporary file on this computer...
      const first = await child(args, () => temps(localRoot).length > 0, { SYNC_STALL: 'read' });
      expect(first.killed).toBe(true);
      const leftLocal = temps(localRoot);
      expect(leftLocal.length).toBeGreaterThan(0);
      // ...then, with new local files, while an upload is half written into its temporary file on the server.
      for (let i = 0; i < 4; i++) writeFileSync(join(localRoot, 'docs', `l${i}.txt`), body(i));
      const second = await child(args, () => temps(disk).length > 0, { SYNC_STALL: 'write' });
      expect(second.killed).toBe(true);
      expect(temps(localRoot).filter((p) => leftLocal.includes(p))).toEqual([]);
      const leftRemote = temps(disk);
      expect(leftRemote.length).toBeGreaterThan(0);

      const third = await child(args);
      expect(third.out).toContain('DONE idle');
      expect(temps(localRoot)).toEqual([]);
      expect(temps(disk)).toEqual([]);
      const l = localView(localRoot);
      expect(sorted(await remoteView(remote, '/Sync'))).toEqual(sorted(l));
      expect([...l.keys()].filter((p) => p.endsWith('.txt'))).toHaveLength(8);
    }), 120_000);
});
