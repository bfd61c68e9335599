/**
 * The storage service's fallbacks, rclone `--disable` style: the shared conformance suite (spec 1,
 * Files and Folders) run on the `local` and `memory` connectors with each optional feature of
 * StorageFeatures switched off in turn, and with all of them off at once. Each variant is its own
 * connector (`local-without-move`, ...) wrapping the real one, so the StorageService and the
 * multipart service see a backend that lacks the feature:
 *
 *   move          rename/move become copy + remove (streamed, folder trees too)
 *   copy          copy streams the file or tree through Tributary
 *   trash         delete is permanent; the `trash` folder is not_found
 *   atomicWrites  uploads go to a hidden temporary name, renamed once every byte is in
 *   chunkWriter   multipart sessions spool their parts on disk and write the file on complete
 *   watch         activity followers poll instead of watching
 *   quota         the account reports no quota
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as activityEndpoints from '../../src-main/rest/activity';
import { createApp, type App } from '../../src-main/app';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, defineConnector, register } from '../../src-main/connectors/registry';
import type { StorageConnector, StorageFeatures } from '../../src-main/connectors/types';
import { scratchDir } from '../servers/util';
import { describeStorageConformance, randomBody, sha256Of, type ConformanceSetup } from './storage-suite';

type Switch = 'move' | 'copy' | 'trash' | 'atomicWrites' | 'chunkWriter' | 'watch' | 'quota';
const ALL: Switch[] = ['move', 'copy', 'trash', 'atomicWrites', 'chunkWriter', 'watch', 'quota'];

/** Paths each variant's connectors were asked to write, by service id. */
const written = new Map<string, string[]>();

/** `inner` with the given optional features taken away; everything else goes straight through. */
function withoutFeatures(inner: StorageConnector, off: Switch[], writes: string[]): StorageConnector {
  const features: StorageFeatures = { ...inner.features };
  for (const f of off) {
    if (f === 'atomicWrites') features.atomicWrites = false;
    else if (f === 'chunkWriter') {
      delete features.openChunkWriter;
      delete features.resumeChunkWriter;
      delete features.partSizeFor;
    } else delete features[f];
  }
  return {
    features,
    stat: (path) => inner.stat(path),
    list: (path) => inner.list(path),
    read: (path, options) => inner.read(path, options),
    write: (path, body, options) => (writes.push(path), inner.write(path, body, options)),
    mkdir: (path) => inner.mkdir(path),
    remove: (path, options) => inner.remove(path, options),
    close: () => inner.close(),
  };
}

/** Registers `<base>-without-<label>`: the base connector with `off` switched off. */
async function registerVariant(base: 'local' | 'memory', label: string, off: Switch[]): Promise<string> {
  await loadConnectors();
  const def = connectorDefinition(base);
  const id = `${base}-without-${label}`;
  const writes: string[] = [];
  written.set(id, writes);
  register(defineConnector({ ...def, id, kind: 'storage', create: (options, context) => withoutFeatures(def.create(options, context) as StorageConnector, off, writes) }));
  return id;
}

/** An app with one account of the variant and one plain account of the other base connector. */
async function variantSetup(base: 'local' | 'memory', service: string): Promise<ConformanceSetup & { dir: string }> {
  const dir = scratchDir(`conf-${service}`);
  const app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const localOptions = (name: string) => ({ path: scratchDir(`${service}-${name}`), trashDir: join(dir, `Trash-${name}`) });
  const memoryOptions = () => ({ store: `${service}-${randomBytes(6).toString('hex')}` });
  const acc = await app.accounts.connect({ service, options: base === 'local' ? localOptions('root') : memoryOptions() });
  const other = base === 'local' ? await app.accounts.connect({ service: 'memory', options: memoryOptions() }) : await app.accounts.connect({ service: 'local', options: localOptions('other') });
  const roots = [acc, other].map((a) => (app.accounts.options(a.id) as { path?: string }).path).filter((p): p is string => !!p);
  return {
    dir,
    app,
    accountId: acc.id,
    otherAccountIds: [other.id],
    async teardown() {
      await app.close();
      for (const p of [dir, ...roots]) rmSync(p, { recursive: true, force: true });
    },
  };
}

const variants: { base: 'local' | 'memory'; label: string; off: Switch[] }[] = [];
for (const base of ['local', 'memory'] as const) {
  // memory has no chunk writer and no watch of its own: nothing to switch off there.
  const own = base === 'local' ? ALL : ALL.filter((f) => f !== 'chunkWriter' && f !== 'watch');
  for (const f of own) variants.push({ base, label: f, off: [f] });
  variants.push({ base, label: 'all', off: ALL });
}

for (const { base, label, off } of variants) {
  describeStorageConformance(
    `${base} without ${label === 'all' ? ALL.join(', ') : label}`,
    async () => variantSetup(base, await registerVariant(base, label, off)),
    { bigSize: 6 << 20, pagingCount: 120, pageSize: 50 },
  );
}

// What the shared suite cannot see from the outside: that the fallback path, not the feature,
// did the work, and that it keeps the same promises.
describe('storage fallbacks with features switched off (spec 1, Files; Multipart upload)', () => {
  let app: App;
  let plain: number;
  let noAtomic: number;
  let noAtomicService: string;
  let noChunks: number;
  let noQuota: number;
  let noWatch: number;
  let noWatchRoot: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    const [atomicId, chunksId, quotaId, watchId] = [
      await registerVariant('local', 'atomic-writes-only', ['atomicWrites']),
      await registerVariant('local', 'chunk-writer-only', ['chunkWriter']),
      await registerVariant('memory', 'quota-only', ['quota']),
      await registerVariant('local', 'watch-only', ['watch']),
    ];
    noAtomicService = atomicId;
    const dir = scratchDir('fallbacks');
    dirs.push(dir);
    app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false, activity: { followers: { pollIntervalMs: 200 } } });
    const local = (service: string) => {
      const root = scratchDir(`fallbacks-${service}`);
      dirs.push(root);
      if (service === watchId) noWatchRoot = root;
      return app.accounts.connect({ service, options: { path: root, trashDir: join(dir, `Trash-${service}`) } });
    };
    plain = (await local('local')).id;
    noAtomic = (await local(atomicId)).id;
    noChunks = (await local(chunksId)).id;
    noWatch = (await local(watchId)).id;
    noQuota = (await app.accounts.connect({ service: quotaId, options: { store: `fallbacks-${randomBytes(6).toString('hex')}` } })).id;
  });
  afterAll(async () => {
    await app?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('without atomicWrites, uploads go through a temporary name; a failed one leaves neither name', async () => {
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent++ < 2) this.push(Buffer.alloc(256 << 10, 7));
        else this.destroy(new Error('client went away'));
      },
    });
    await expect(app.storage.upload(noAtomic, 'root', 'half.bin', failing)).rejects.toThrow(/client went away/);
    const connector = await app.accounts.storage(noAtomic);
    expect(await connector.list('/')).toEqual([]);
    const ok = await app.storage.upload(noAtomic, 'root', 'whole.bin', Readable.from([Buffer.from('all of it')]));
    expect((await connector.list('/')).map((e) => e.name)).toEqual(['whole.bin']);
    expect(ok.size).toBe(9);
    // Both bodies were written to a hidden name first, never straight to the final one.
    const writes = written.get(noAtomicService)!;
    expect(writes).toHaveLength(2);
    for (const path of writes) expect(path).toMatch(/^\/\.tributary-[0-9a-f]{12}\.part$/);
  });

  it('without a chunk writer, a multipart session spools its parts and writes the file on complete', async () => {
    const size = 9 << 20;
    const mode = (id: number) => app.db.prepare('SELECT mode FROM multipart_sessions WHERE id = ?').pluck().get(id);
    const native = await app.uploads.multipart.init(plain, { parentId: 'root', name: 'native.bin', size, overwrite: false });
    expect(mode(native.id)).toBe('native');
    await app.uploads.multipart.abort(plain, native.id);

    const session = await app.uploads.multipart.init(noChunks, { parentId: 'root', name: 'spooled.bin', size, overwrite: false });
    expect(mode(session.id)).toBe('spool');
    const { stream, sha256 } = randomBody(size);
    const data = Buffer.concat(await stream.toArray());
    const parts = Math.ceil(size / session.part_size);
    for (let n = parts; n >= 1; n--) {
      const part = data.subarray((n - 1) * session.part_size, n * session.part_size);
      await app.uploads.multipart.putPart(noChunks, session.id, n, Readable.from([part]), part.length);
    }
    const file = await app.uploads.multipart.complete(noChunks, session.id);
    expect(file.size).toBe(size);
    expect(await sha256Of((await app.storage.download(noChunks, file.id)).stream)).toEqual({ sha256, size });
  });

  it('without quota, the account reports none (spec 1, Account: quota)', async () => {
    expect(await app.accounts.quota(noQuota)).toBeNull();
  });

  it('without watch, activity follows the account by polling (spec 3, Activity sources)', async () => {
    const status = async (account: number) => {
      const sub = await app.activity.subscriptions.create(account, {});
      return () => app.activity.followers.status().find((s) => s.subscription === sub.id);
    };
    const watched = await status(plain);
    await vi.waitFor(() => expect(watched()?.mode).toBe('watching'), { timeout: 10_000, interval: 25 });
    const polled = await status(noWatch);
    await vi.waitFor(() => expect(polled()?.lastRunAt ?? null).not.toBeNull(), { timeout: 10_000, interval: 25 });
    expect(polled()!.mode).toBe('polling');
    writeFileSync(join(noWatchRoot, 'from-outside.txt'), 'written beside the app');
    await vi.waitFor(
      () => {
        const page = activityEndpoints.listActivity(app.activity, noWatch, 'default', { cursor: 'after-auth' }, 1).body as { objects: { type: string; metadata: { path: string } | null }[] };
        expect(page.objects.map((a) => [a.type, a.metadata?.path])).toContainEqual(['add', '/from-outside.txt']);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
