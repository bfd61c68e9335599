/**
 * Child process for the sync crash tests: one engine syncing one pair (local folder ↔ an account
 * of `service`) in a database file.
 * `node scripts/run-ts.mjs test/sync/crash-child.ts <db> <local> <trash> <service> <json options>`;
 * prints JOURNAL <n> (operations resumed from the journal), then DONE when in step, and exits.
 * SYNC_STALL=read (or write) makes every download (or upload) stop after half of its first chunk
 * and wait forever, so that a kill finds a write in the middle of its temporary file.
 * SYNC_TRACE=1 prints OP <call> as each call that reads or changes the remote side starts, so
 * that a test can kill the engine after a chosen number of them; SYNC_SLOW=<ms> waits that long
 * in the middle of every chunk downloaded or uploaded (a slow network).
 */
import { Readable } from 'node:stream';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import type { StorageConnector } from '../../src-main/connectors/types';
import { SyncEngine } from '../../src-main/sync/engine';
import { syncDb } from './scenario';

/** Each chunk in two halves with `ms` between them: a write or download that a kill can find half done. */
async function* slowly(body: AsyncIterable<Buffer>, ms: number): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    const half = Math.max(1, chunk.length >> 1);
    yield chunk.subarray(0, half);
    await new Promise((r) => setTimeout(r, ms));
    if (half < chunk.length) yield chunk.subarray(half);
  }
}

async function* halfThenHang(body: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    yield chunk.subarray(0, Math.max(1, chunk.length >> 1));
    await new Promise(() => {});
  }
}

export async function main([dbFile, localRoot, trash, service, options]: string[]): Promise<void> {
  await loadConnectors();
  const def = connectorDefinition(service!);
  const remote = (await def.create(parseOptions(def, JSON.parse(options!)), { dataDir: trash!, accountId: 1 })) as StorageConnector;
  if (process.env.SYNC_STALL === 'read') {
    const read = remote.read.bind(remote);
    remote.read = async (path, o) => Readable.from(halfThenHang(await read(path, o)));
  } else if (process.env.SYNC_STALL === 'write') {
    const write = remote.write.bind(remote);
    remote.write = (path, body, o) => write(path, Readable.from(halfThenHang(body)), o);
  }
  const slow = Number(process.env.SYNC_SLOW ?? 0);
  if (slow > 0) {
    const read = remote.read.bind(remote);
    const write = remote.write.bind(remote);
    remote.read = async (path, o) => Readable.from(slowly(await read(path, o), slow));
    remote.write = (path, body, o) => write(path, Readable.from(slowly(body, slow)), o);
  }
  if (process.env.SYNC_TRACE) {
    const calls = remote as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of ['read', 'write', 'mkdir', 'remove'] as const) {
      const call = calls[name].bind(remote);
      calls[name] = (...a: unknown[]) => (process.stdout.write(`OP ${name}\n`), call(...a));
    }
    const move = remote.features.move;
    if (move) remote.features.move = (from, to) => (process.stdout.write('OP move\n'), move(from, to));
  }
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
