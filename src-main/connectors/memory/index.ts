/**
 * `memory`: the reference backend. Holds a tree in process memory with exactly the semantics
 * the contract asks for, so that the conformance suite and the service tests have a backend
 * whose behaviour is known to be right. Not a substitute for the real servers in tests.
 */
import { Readable } from 'node:stream';
import { z } from 'zod';
import { ServiceError } from '../../errors';
import { defineConnector } from '../registry';
import { ChangedMeanwhile } from '../shared/if-match';
import { baseName, isInside, parentOf, ROOT } from '../shared/paths';
import type { Entry, StorageConnector, StorageFeatures, WriteOptions } from '../types';

interface Node {
  kind: 'file' | 'folder';
  data?: Buffer;
  modified: Date;
  created: Date;
}

const stores = new Map<string, Map<string, Node>>();

const options = z.object({
  /** Accounts naming the same store share one tree (lets tests connect it twice). */
  store: z.string().min(1).max(200).default('default').meta({ title: 'Store name' }),
});

export class MemoryConnector implements StorageConnector {
  private nodes: Map<string, Node>;
  readonly features: StorageFeatures;

  constructor(store: string) {
    let nodes = stores.get(store);
    if (!nodes) {
      nodes = new Map([[ROOT, { kind: 'folder', modified: new Date(), created: new Date() }]]);
      stores.set(store, nodes);
    }
    this.nodes = nodes;
    const trashed = new Map<string, Node>();
    this.features = {
      caseSensitive: true,
      hashes: [],
      modTimePrecisionMs: 1,
      atomicWrites: true,
      noReplace: true,
      move: async (from, to) => this.moveOrCopy(from, to, true),
      copy: async (from, to) => this.moveOrCopy(from, to, false),
      trash: {
        put: async (path) => {
          const node = this.node(path);
          trashed.set(`/${baseName(path)}`, node);
          await this.remove(path, { recursive: true });
          return `/${baseName(path)}`;
        },
        list: async () => [...trashed.entries()].map(([p, n]) => this.toEntry(p, n)),
      },
      quota: async () => ({
        used: [...this.nodes.values()].reduce((sum, n) => sum + (n.data?.length ?? 0), 0),
        total: null,
      }),
    };
  }

  private node(path: string): Node {
    const node = this.nodes.get(path);
    if (!node) throw new ServiceError('not_found', `"${path}" was not found.`);
    return node;
  }

  private toEntry(path: string, node: Node): Entry {
    return {
      path,
      name: baseName(path),
      kind: node.kind,
      size: node.kind === 'file' ? node.data!.length : null,
      modified: node.modified,
      created: node.created,
      etag: `${node.modified.getTime()}-${node.data?.length ?? 0}`,
    };
  }

  private requireFolder(path: string): void {
    if (this.node(path).kind !== 'folder') throw new ServiceError('invalid_parent_folder', `"${path}" is not a folder.`);
  }

  async stat(path: string): Promise<Entry> {
    return this.toEntry(path, this.node(path));
  }

  async list(path: string): Promise<Entry[]> {
    this.requireFolder(path);
    const out: Entry[] = [];
    for (const [p, n] of this.nodes) if (p !== ROOT && parentOf(p) === path) out.push(this.toEntry(p, n));
    return out;
  }

  async read(path: string, opts: { start?: number; end?: number } = {}): Promise<Readable> {
    const node = this.node(path);
    if (node.kind !== 'file') throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
    const start = opts.start ?? 0;
    const end = opts.end === undefined ? node.data!.length : opts.end + 1;
    return Readable.from([node.data!.subarray(start, end)]);
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    this.requireFolder(parentOf(path));
    const chunks: Buffer[] = [];
    for await (const chunk of body) {
      opts.signal?.throwIfAborted();
      chunks.push(Buffer.from(chunk));
    }
    if (opts.noReplace) {
      let target: string | undefined = path;
      while (target !== undefined && this.nodes.has(target)) target = await opts.noReplace.next?.(target);
      if (target === undefined) throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
      path = target;
    }
    const existing = this.nodes.get(path);
    if (opts.ifMatch !== undefined && (existing?.kind !== 'file' || this.toEntry(path, existing).etag !== opts.ifMatch)) throw new ChangedMeanwhile(path);
    if (existing?.kind === 'folder') throw new ServiceError('naming_conflict', `A folder named "${baseName(path)}" exists.`);
    const now = new Date();
    const node: Node = { kind: 'file', data: Buffer.concat(chunks), modified: now, created: existing?.created ?? now };
    this.nodes.set(path, node);
    return this.toEntry(path, node);
  }

  async mkdir(path: string): Promise<Entry> {
    this.requireFolder(parentOf(path));
    if (this.nodes.has(path)) throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
    const now = new Date();
    const node: Node = { kind: 'folder', modified: now, created: now };
    this.nodes.set(path, node);
    return this.toEntry(path, node);
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    const node = this.node(path);
    const children = [...this.nodes.keys()].filter((p) => isInside(p, path));
    if (node.kind === 'folder' && children.length > 0 && !recursive) {
      throw new ServiceError('folder_not_empty', `The folder "${baseName(path)}" is not empty.`);
    }
    for (const p of children) this.nodes.delete(p);
    this.nodes.delete(path);
  }

  private moveOrCopy(from: string, to: string, move: boolean): Entry {
    const node = this.node(from);
    this.requireFolder(parentOf(to));
    if (this.nodes.has(to)) throw new ServiceError('naming_conflict', `"${baseName(to)}" already exists.`);
    if (to === from || isInside(to, from)) throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    const subtree = [[from, node] as const, ...[...this.nodes].filter(([p]) => isInside(p, from))];
    for (const [p, n] of subtree) {
      const target = to + p.slice(from.length);
      this.nodes.set(target, move ? n : { ...n, data: n.data && Buffer.from(n.data), created: new Date() });
      if (move) this.nodes.delete(p);
    }
    return this.toEntry(to, this.nodes.get(to)!);
  }

  async close(): Promise<void> {}
}

export default defineConnector({
  id: 'memory',
  name: 'In-memory (reference)',
  kind: 'storage',
  group: 'reference',
  options,
  fromImport: (body) => ({ store: body.account ?? 'default' }),
  describe: (o) => `memory:${o.store}`,
  create: (o) => new MemoryConnector(o.store),
});
