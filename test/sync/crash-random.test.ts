// Two-way sync: the random scenarios of engine.servers.test.ts against the same real servers
// (local ↔ Apache WebDAV, local ↔ OpenSSH SFTP, local ↔ S3 on moto) with the engine SIGKILLed
// mid-run (docs/sync.md, *Crashes*). Users change both sides at random between runs; each run is killed after a random
// number of its calls to the server (reads, writes, folders, deletes, moves) and started again on
// the same database, with more changes in between. At the end one run goes to completion: both
// sides are equal, no temporary file is left on either, and no version a user wrote and did not
// remove is lost (it is on a side, maybe as a conflict copy, or in the trash). Seeded as the other
// scenarios (SYNC_SEED=<n> plays another, SYNC_SEED=random draws one; failures name it).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startApache } from '../servers/apache';
import { startMoto } from '../servers/s3';
import { startSshd } from '../servers/sshd';
import { runTsChild, scratchDir } from '../servers/util';
import { localView, remoteView, rng, sorted, trashContents, Users } from './scenario';

interface Backend {
  service: string;
  options: Record<string, unknown>;
  stop(): Promise<void>;
}

const servers: Record<string, () => Promise<Backend>> = {
  'Apache WebDAV': async () => {
    const s = await startApache();
    return { service: 'webdav', options: { protocol: 'http', host: s.host, port: s.port, path: '/', username: s.user, password: s.password }, stop: () => s.stop() };
  },
  'OpenSSH SFTP': async () => {
    const s = await startSshd();
    return { service: 'sftp', options: { host: s.host, port: s.port, username: s.username, password: s.password, root: s.dataDir, hostKeyFingerprint: s.hostKeyFingerprint }, stop: () => s.stop() };
  },
  'S3 on moto': async () => {
    const s = await startMoto();
    return { service: 's3', options: s.options, stop: () => s.stop() };
  },
};

const ROUNDS = 5;
const calls = (out: string) => out.split('\n').filter((l) => l.startsWith('OP ')).length;

describe.each(Object.keys(servers))('sync engine: random scenarios with SIGKILL mid-run (local ↔ %s)', (name) => {
  it('ends in step with no version lost and no temporary file left', async () => {
    const seed = process.env.SYNC_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.SYNC_SEED ?? 20261124);
    if (!Number.isSafeInteger(seed)) throw new Error(`SYNC_SEED must be a number or "random", not ${process.env.SYNC_SEED}`);
    await loadConnectors();
    const dir = scratchDir('sync-crash-random');
    const b = await servers[name]();
    const def = connectorDefinition(b.service);
    const remote = (await def.create(parseOptions(def, b.options), { dataDir: dir, accountId: 1 })) as StorageConnector;
    const localRoot = join(dir, 'local');
    const trash = join(dir, 'trash');
    const args = [join(dir, 'sync.db'), localRoot, trash, b.service, JSON.stringify(b.options)];
    try {
      mkdirSync(localRoot);
      await remote.mkdir('/Sync');
      const rand = rng(seed);
      const users = new Users(localRoot, remote, '/Sync', rand);
      for (let i = 0; i < 16; i++) await users.localStep();
      let kills = 0;
      const at: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < 4; i++) {
          await users.localStep();
          await users.remoteStep();
        }
        // Killed once it has started this many calls to the server (1–6): before, during or
        // after a journaled write, a move or a delete; a run with fewer calls ends on its own.
        // Transfers wait 30 ms in the middle of each chunk, so a kill often finds one half done.
        const after = 1 + rand(6);
        const r = await runTsChild('test/sync/crash-child.ts', args, { env: { SYNC_TRACE: '1', SYNC_SLOW: '30' }, pollMs: 5, killWhen: (out) => calls(out) >= after });
        if (r.killed) kills++;
        at.push(r.killed ? calls(r.out) : -1);
      }
      const last = await runTsChild('test/sync/crash-child.ts', args);
      expect(last.out, `seed ${seed}`).toContain('DONE idle');
      const [l, rv] = [localView(localRoot), await remoteView(remote, '/Sync')];
      // Object stores have no empty folders: compare files, and folders where the backend keeps them.
      const files = (m: Map<string, string>) => sorted(m).filter(([, c]) => c !== '/');
      expect(files(rv), `seed ${seed}`).toEqual(files(l));
      expect([...l.keys(), ...rv.keys()].filter((p) => p.includes('.tributary-')), `seed ${seed}`).toEqual([]);
      expect(users.lost([l], trashContents(trash)), `seed ${seed}`).toEqual([]);
      console.log(`sync crash-random ${b.service} seed ${seed}: killed ${kills} of ${ROUNDS} runs (after calls: ${at.join(', ')}), ${l.size} entries`);
      // The scenario did kill runs in the middle of their work (a run left alone ends by itself).
      expect(kills, `seed ${seed}`).toBeGreaterThan(0);
    } finally {
      await remote.close();
      await b.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
