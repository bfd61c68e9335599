/**
 * Child process for the sync crash test: one engine syncing one pair (local folder ↔ WebDAV) in
 * a database file. `node scripts/run-ts.mjs test/sync/crash-child.ts <db> <local> <trash> <json webdav options>`;
 * prints JOURNAL <n> (operations resumed from the journal), then DONE when in step, and exits.
 */
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { SyncEngine } from '../../src-main/sync/engine';
import { syncDb } from './scenario';

export async function main([dbFile, localRoot, trash, options]: string[]): Promise<void> {
  await loadConnectors();
  const def = connectorDefinition('webdav');
  const remote = def.create(parseOptions(def, JSON.parse(options!)), { dataDir: trash!, accountId: 1 }) as StorageConnector;
  const db = syncDb(dbFile);
  const pending = db.prepare('SELECT count(*) FROM sync_journal').pluck().get();
  const engine = new SyncEngine(db, async () => remote, { trashDir: trash, manual: true, concurrency: 2 });
  await engine.start();
  process.stdout.write(`JOURNAL ${pending}\n`);
  const pair = engine.store.pairs()[0] ?? (await engine.create({ localPath: localRoot!, account: 1, remotePath: '/Sync' }));
  await engine.run(pair.id);
  process.stdout.write(`DONE ${engine.store.pair(pair.id).state}\n`);
  await engine.close();
  db.close();
  await remote.close();
}
