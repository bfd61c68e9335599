/**
 * Random sync scenarios against a real server: a local folder and a connector's folder, changed
 * at random on both sides by "users" (seeded, so a failure replays), then synced by the engine.
 * Checks that both sides end equal and that no version is lost: every version a user wrote and
 * did not remove themselves is in a final tree (maybe as a conflict copy) or in the local trash.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { openDb, type Db } from '../../src-main/cache/db';
import { loadConnectors } from '../../src-main/connectors/all';
import { connectorDefinition, parseOptions } from '../../src-main/connectors/registry';
import { joinPath, ROOT } from '../../src-main/connectors/shared/paths';
import type { StorageConnector } from '../../src-main/connectors/types';
import { LocalConnector } from '../../src-main/connectors/local';
import { SyncEngine, type SyncEngineOptions } from '../../src-main/sync/engine';

export function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return (n: number) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

/** A database with one account row (id 1) for the pair to belong to. */
export function syncDb(file = ':memory:'): Db {
  const db = openDb(file);
  if (!db.prepare('SELECT 1 FROM accounts WHERE id = 1').get())
    db.prepare("INSERT INTO accounts (id, service, account, options, created, modified) VALUES (1, 'test', 'remote', x'00', 'c', 'm')").run();
  return db;
}

export async function textOf(c: StorageConnector, path: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const ch of await c.read(path)) chunks.push(ch as Buffer);
  return Buffer.concat(chunks).toString();
}

/** The text of the file at `join(...p)` on this computer, or undefined when there is none. */
export const text = (...p: string[]) => (existsSync(join(...p)) ? readFileSync(join(...p), 'utf8') : undefined);

/** path → content ('/' suffix for folders) of the remote folder. */
export async function remoteView(c: StorageConnector, root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const visit = async (folder: string) => {
    for (const e of await c.list(folder === ROOT ? root : `${root === ROOT ? '' : root}${folder}`)) {
      const rel = joinPath(folder, e.name);
      if (e.kind === 'folder') {
        out.set(rel, '/');
        await visit(rel);
      } else out.set(rel, await textOf(c, e.path));
    }
  };
  await visit(ROOT);
  return out;
}

export function localView(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (folder: string) => {
    for (const name of readdirSync(join(root, folder)).sort()) {
      const rel = joinPath(folder, name);
      const abs = join(root, rel);
      if (statSync(abs).isDirectory()) {
        out.set(rel, '/');
        visit(rel);
      } else out.set(rel, readFileSync(abs, 'utf8'));
    }
  };
  visit(ROOT);
  return out;
}

export function trashContents(trashDir: string): string[] {
  const files = join(trashDir, 'files');
  if (!existsSync(files)) return [];
  const out: string[] = [];
  const visit = (abs: string) => {
    if (statSync(abs).isDirectory()) for (const n of readdirSync(abs)) visit(join(abs, n));
    else out.push(readFileSync(abs, 'utf8'));
  };
  visit(files);
  return out;
}

const NAMES = ['a.txt', 'b.txt', 'Notes', 'c.md', 'photo.jpg', 'd'];

/** Users of both sides. */
export class Users {
  readonly created = new Set<string>();
  readonly removed = new Set<string>();
  private n = 0;
  constructor(
    readonly localRoot: string,
    readonly remote: StorageConnector,
    readonly remoteRoot: string,
    readonly rand: (n: number) => number,
  ) {}

  private content() {
    const c = `v${++this.n}-${randomBytes(4).toString('hex')}`;
    this.created.add(c);
    return c;
  }
  private r(p: string) {
    return this.remoteRoot === ROOT ? p : `${this.remoteRoot}${p}`;
  }

  async localStep(): Promise<void> {
    const view = localView(this.localRoot);
    const paths = [...view.keys()];
    const folders = [ROOT, ...paths.filter((p) => view.get(p) === '/')];
    const files = paths.filter((p) => view.get(p) !== '/');
    const abs = (p: string) => join(this.localRoot, p);
    const at = joinPath(folders[this.rand(folders.length)], NAMES[this.rand(NAMES.length)]);
    switch (this.rand(6)) {
      case 0:
      case 1:
        if (!existsSync(abs(at))) writeFileSync(abs(at), this.content());
        break;
      case 2:
        if (!existsSync(abs(at))) mkdirSync(abs(at));
        break;
      case 3:
        if (files.length) {
          const f = files[this.rand(files.length)];
          this.removed.add(view.get(f)!);
          writeFileSync(abs(f), this.content());
        }
        break;
      case 4:
        if (files.length) {
          const f = files[this.rand(files.length)];
          if (!existsSync(abs(at)) && !at.startsWith(`${f}/`)) renameSync(abs(f), abs(at));
        }
        break;
      case 5:
        if (files.length) {
          const f = files[this.rand(files.length)];
          this.removed.add(view.get(f)!);
          rmSync(abs(f));
        }
        break;
    }
  }

  async remoteStep(): Promise<void> {
    const view = await remoteView(this.remote, this.remoteRoot);
    const paths = [...view.keys()];
    const folders = [ROOT, ...paths.filter((p) => view.get(p) === '/')];
    const files = paths.filter((p) => view.get(p) !== '/');
    const at = joinPath(folders[this.rand(folders.length)], NAMES[this.rand(NAMES.length)]);
    const put = (p: string, c: string) => this.remote.write(this.r(p), Readable.from([Buffer.from(c)]), { size: Buffer.byteLength(c) });
    switch (this.rand(6)) {
      case 0:
      case 1:
        if (!view.has(at)) await put(at, this.content());
        break;
      case 2:
        if (!view.has(at)) await this.remote.mkdir(this.r(at));
        break;
      case 3:
        if (files.length) {
          const f = files[this.rand(files.length)];
          this.removed.add(view.get(f)!);
          await put(f, this.content());
        }
        break;
      case 4:
        if (files.length && this.remote.features.move) {
          const f = files[this.rand(files.length)];
          if (!view.has(at)) await this.remote.features.move(this.r(f), this.r(at));
        }
        break;
      case 5:
        if (files.length) {
          const f = files[this.rand(files.length)];
          this.removed.add(view.get(f)!);
          await this.remote.remove(this.r(f), { recursive: false });
        }
        break;
    }
  }

  /** Versions lost: written, never removed by a user, and neither on a side nor in the trash. */
  lost(finalViews: Map<string, string>[], trash: string[]): string[] {
    const present = new Set<string>(trash);
    for (const v of finalViews) for (const c of v.values()) present.add(c);
    return [...this.created].filter((c) => !this.removed.has(c) && !present.has(c));
  }
}

/** An engine over one pair of `localRoot` and `remote` at `remoteRoot`. */
export async function pairEngine(db: Db, remote: StorageConnector, localRoot: string, remoteRoot: string, trashDir: string) {
  const engine = new SyncEngine(db, async () => remote, { trashDir, manual: true });
  const pair = engine.store.pairs()[0] ?? (await engine.create({ localPath: localRoot, account: 1, remotePath: remoteRoot }));
  return { engine, pair };
}

/**
 * An engine over a test folder and a local account at `theirs`, trash and database in `dir`
 * (`dbName` in memory when omitted).
 */
export function localEngine(dir: string, theirs: string, options: Omit<SyncEngineOptions, 'trashDir'>, dbName?: string, trash = 'trash'): { db: Db; remote: LocalConnector; engine: SyncEngine } {
  const db = syncDb(dbName ? join(dir, dbName) : undefined);
  const remote = new LocalConnector({ path: theirs, trashDir: join(dir, trash) });
  const engine = new SyncEngine(db, async () => remote, { ...options, trashDir: join(dir, trash) });
  return { db, remote, engine };
}

export const sorted = (m: Map<string, string>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));

/** A connector of `service` with these options (a test server's), opened as an account opens it. */
export async function openConnector(service: string, options: Record<string, unknown>, dataDir: string): Promise<StorageConnector> {
  await loadConnectors();
  const def = connectorDefinition(service);
  return (await def.create(parseOptions(def, options), { dataDir, accountId: 1 })) as StorageConnector;
}
