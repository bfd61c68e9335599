/**
 * The `ephemeral` area (spec 1 Limits, spec 2 Send: attachments are uploaded with
 * `parent_id` = `ephemeral` and kept at least 60 minutes): files kept under
 * `<dataDir>/ephemeral/<account>/`, served as storage files, swept after a day.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Resource } from '../contract';
import { ServiceError } from '../errors';
import type { IdCodec } from '../ids';
import { standaloneFile, type FileProvider } from './file-provider';

/** Longer than the 60 minutes the spec promises, so a slow compose never loses its files. */
export const EPHEMERAL_TTL_MS = 24 * 3600_000;
const PREFIX = 'ephemeral:';

interface Meta {
  name: string;
  size: number;
  created: string;
}

export class EphemeralFiles implements FileProvider {
  constructor(
    private readonly root: string,
    private readonly ids: IdCodec,
  ) {}

  readonly area = 'ephemeral';

  owns(upstreamId: string): boolean {
    return upstreamId.startsWith(PREFIX);
  }

  private dir(accountId: number, key: string): string {
    if (!/^[0-9a-f-]{36}$/.test(key)) throw new ServiceError('not_found', 'No such ephemeral file.');
    return join(this.root, String(accountId), key);
  }

  private toResource(accountId: number, key: string, meta: Meta): Resource {
    return standaloneFile({
      id: this.ids.encode(accountId, PREFIX + key),
      account: accountId,
      name: meta.name,
      size: meta.size,
      created: meta.created,
      parent: { id: 'ephemeral', name: 'ephemeral' },
      rawId: PREFIX + key,
    });
  }

  async upload(accountId: number, name: string, body: Readable): Promise<Resource> {
    const key = randomUUID();
    const dir = this.dir(accountId, key);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await pipeline(body, createWriteStream(join(dir, 'content')));
      const meta: Meta = { name, size: (await stat(join(dir, 'content'))).size, created: new Date().toISOString() };
      await writeFile(join(dir, 'meta.json'), JSON.stringify(meta));
      return this.toResource(accountId, key, meta);
    } catch (e) {
      await rm(dir, { recursive: true, force: true });
      throw e;
    }
  }

  private async meta(accountId: number, id: string): Promise<{ key: string; meta: Meta }> {
    const key = this.ids.decode(accountId, id).slice(PREFIX.length);
    try {
      return { key, meta: JSON.parse(await readFile(join(this.dir(accountId, key), 'meta.json'), 'utf8')) as Meta };
    } catch {
      throw new ServiceError('not_found', 'This ephemeral file has expired or never existed.');
    }
  }

  async get(accountId: number, id: string): Promise<Resource> {
    const { key, meta } = await this.meta(accountId, id);
    return this.toResource(accountId, key, meta);
  }

  async open(accountId: number, id: string, range?: { start?: number; end?: number }) {
    const { key, meta } = await this.meta(accountId, id);
    const stream = createReadStream(join(this.dir(accountId, key), 'content'), { start: range?.start, end: range?.end });
    return { resource: this.toResource(accountId, key, meta), stream };
  }

  async delete(accountId: number, id: string): Promise<void> {
    const { key } = await this.meta(accountId, id);
    await rm(this.dir(accountId, key), { recursive: true, force: true });
  }

  /** Removes files older than the TTL; returns how many went. */
  async sweep(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const account of await readdir(this.root).catch(() => [] as string[])) {
      for (const key of await readdir(join(this.root, account)).catch(() => [] as string[])) {
        const dir = join(this.root, account, key);
        const info = await stat(dir).catch(() => null);
        if (info && now - info.mtimeMs > EPHEMERAL_TTL_MS) {
          await rm(dir, { recursive: true, force: true });
          removed++;
        }
      }
    }
    return removed;
  }
}
