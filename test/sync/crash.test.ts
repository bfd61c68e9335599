// Two-way sync, "a crash mid-run" end to end (docs/sync.md): the engine is SIGKILLed twice while
// it uploads and downloads (local folder ↔ Apache WebDAV), restarted on the same database each
// time, and must end in step with nothing lost, nothing duplicated and no conflict copies.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { localView, remoteView, sorted, trashContents } from './scenario';

const ROOT = join(import.meta.dirname, '..', '..');

/** Runs the child; with `killAfter`, SIGKILLs it once the remote holds that many more files. */
function child(args: string[], watch?: () => Promise<boolean>): Promise<{ out: string; killed: boolean }> {
  const c = spawn(process.execPath, [join(ROOT, 'scripts/run-ts.mjs'), 'test/sync/crash-child.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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
      if (out.includes('JOURNAL') && (await watch().catch(() => false))) {
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

describe('sync engine: SIGKILL mid-run (local ↔ Apache WebDAV)', () => {
  let server: ApacheServer;
  let remote: StorageConnector;
  let options: Record<string, unknown>;
  const dir = scratchDir('sync-crash');

  beforeAll(async () => {
    await loadConnectors();
    server = await startApache();
    options = { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password };
    const def = connectorDefinition('webdav');
    remote = def.create(parseOptions(def, options), { dataDir: dir, accountId: 1 }) as StorageConnector;
  });
  afterAll(async () => {
    await remote?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes after SIGKILL without loss, duplicates or conflicts', async () => {
    const localRoot = join(dir, 'local');
    const trash = join(dir, 'trash');
    mkdirSync(join(localRoot, 'docs'), { recursive: true });
    await remote.mkdir('/Sync');
    await remote.mkdir('/Sync/remote');
    const body = (i: number) => `file ${i} `.repeat(4000);
    for (let i = 0; i < 60; i++) writeFileSync(join(localRoot, 'docs', `l${i}.txt`), body(i));
    for (let i = 0; i < 20; i++) await remote.write(`/Sync/remote/r${i}.txt`, Readable.from([Buffer.from(body(1000 + i))]));
    const args = [join(dir, 'sync.db'), localRoot, trash, JSON.stringify(options)];
    const uploaded = async () => (await remote.list('/Sync/docs').catch(() => [])).length;

    const first = await child(args, async () => (await uploaded()) >= 15);
    expect(first.killed).toBe(true);
    const second = await child(args, async () => (await uploaded()) >= 40);
    const third = await child(args);
    expect(third.out).toContain('DONE idle');
    console.log(`sync crash test: killed ${[first, second].filter((r) => r.killed).length} times; journal at restarts: ${[second.out, third.out].map((o) => /JOURNAL (\d+)/.exec(o)?.[1]).join(', ')}`);

    const l = localView(localRoot);
    const r = await remoteView(remote, '/Sync');
    expect(sorted(r)).toEqual(sorted(l));
    expect([...l.keys()].filter((p) => p.includes('conflict'))).toEqual([]);
    expect([...l.keys()].filter((p) => p.endsWith('.txt'))).toHaveLength(80);
    for (let i = 0; i < 60; i++) expect(l.get(`/docs/l${i}.txt`)).toBe(body(i));
    for (let i = 0; i < 20; i++) expect(l.get(`/remote/r${i}.txt`)).toBe(body(1000 + i));
    expect(trashContents(trash)).toEqual([]);
  }, 300_000);
});
