// Two-way sync end to end (docs/sync.md), local folder ↔ Apache WebDAV (mod_dav_fs): random
// changes on both sides, each run must leave both sides equal with no version lost.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { startApache, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';
import { localView, pairEngine, remoteView, rng, sorted, syncDb, trashContents, Users } from './scenario';

describe('sync engine: local ↔ Apache WebDAV', () => {
  let server: ApacheServer;
  let remote: StorageConnector;
  const dir = scratchDir('sync-webdav');

  beforeAll(async () => {
    await loadConnectors();
    server = await startApache();
    const def = connectorDefinition('webdav');
    remote = def.create(parseOptions(def, { protocol: 'http', host: server.host, port: server.port, path: '/', username: server.user, password: server.password }), { dataDir: dir, accountId: 1 }) as StorageConnector;
  });
  afterAll(async () => {
    await remote?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('random changes on both sides converge, with moves, conflicts and deletes, and no version lost', async () => {
    const seed = Number(process.env.SYNC_SEED ?? Date.now() % 1e9);
    const localRoot = join(dir, 'local');
    const trash = join(dir, 'trash');
    mkdirSync(localRoot);
    await remote.mkdir('/Sync');
    const db = syncDb();
    const { engine, pair } = await pairEngine(db, remote, localRoot, '/Sync', trash);
    const users = new Users(localRoot, remote, '/Sync', rng(seed));
    let ops = 0;
    try {
      for (let i = 0; i < 8; i++) await users.localStep();
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 3; i++) {
          await users.localStep();
          await users.remoteStep();
        }
        const r = await engine.run(pair.id);
        ops += r.ops;
        expect(r.plan.refused, `seed ${seed}`).toBeUndefined();
        const [l, rv] = [localView(localRoot), await remoteView(remote, '/Sync')];
        expect(sorted(rv), `seed ${seed}, round ${round}`).toEqual(sorted(l));
        expect(users.lost([l], trashContents(trash)), `seed ${seed}`).toEqual([]);
      }
      expect(engine.store.pair(pair.id).state).toBe('idle');
      expect(ops).toBeGreaterThan(10);
      console.log(`sync webdav seed ${seed}: ${ops} operations, ${engine.store.conflicts().length} conflicts, ${localView(localRoot).size} entries`);
      // A run with nothing changed does nothing.
      expect((await engine.run(pair.id)).ops).toBe(0);
    } finally {
      await engine.close();
      db.close();
    }
  });
});
