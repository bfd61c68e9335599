/**
 * Chunked uploads on this computer: positional writes into a hidden file beside the target,
 * parts in any order and in parallel, published under the final name on complete.
 */
import { open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { ServiceError } from '../../errors';
import { baseName } from '../shared/paths';
import type { ChunkWriter, Entry, NoReplace, PartReceipt } from '../types';
import { fsError } from '../shared/fs-errors';

/** What the writer needs of the local connector: real paths, the no-replace publish, stat. */
export interface ChunkWriterHost {
  /** fsync the file before it is published (the account's `syncWrites`). */
  readonly syncWrites: boolean;
  resolveForWriter(path: string): Promise<string>;
  publish(temp: string, path: string, noReplace?: NoReplace): Promise<string>;
  stat(path: string): Promise<Entry>;
}

export class LocalChunkWriter implements ChunkWriter {
  readonly parallel = true;
  readonly partSize: number;
  private handle?: Promise<FileHandle>;

  constructor(
    private readonly c: ChunkWriterHost,
    private readonly path: string,
    readonly state: { temp: string; size: number; partSize: number },
  ) {
    this.partSize = state.partSize;
  }

  private get parts(): number {
    return Math.max(1, Math.ceil(this.state.size / this.partSize));
  }

  private fh(): Promise<FileHandle> {
    this.handle ??= this.c.resolveForWriter(this.state.temp).then((abs) => open(abs, 'r+'));
    this.handle.catch(() => (this.handle = undefined));
    return this.handle;
  }

  async writePart(partNumber: number, body: Buffer, signal?: AbortSignal): Promise<PartReceipt> {
    signal?.throwIfAborted();
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > this.parts) {
      throw new ServiceError('invalid_parameters', `part_number must be between 1 and ${this.parts}.`);
    }
    const offset = (partNumber - 1) * this.partSize;
    const expected = Math.min(this.partSize, this.state.size - offset);
    if (body.length !== expected) {
      throw new ServiceError('invalid_parameters', `Part ${partNumber} must be ${expected} bytes, not ${body.length}.`);
    }
    try {
      const h = await this.fh();
      for (let done = 0; done < body.length; ) done += (await h.write(body, done, body.length - done, offset + done)).bytesWritten;
    } catch (e) {
      throw fsError(e, this.path);
    }
    return { partNumber, size: body.length };
  }

  async complete(parts: PartReceipt[], options: { noReplace?: NoReplace } = {}): Promise<Entry> {
    const have = new Set(parts.map((p) => p.partNumber));
    for (let n = 1; n <= this.parts; n++) {
      if (!have.has(n) && this.state.size > 0) throw new ServiceError('invalid_parameters', `Part ${n} has not been uploaded.`);
    }
    let path = this.path;
    try {
      const h = await this.fh();
      if (this.c.syncWrites) await h.sync();
      await h.close();
      this.handle = undefined;
      const target = await this.c.resolveForWriter(this.path);
      if ((await stat(target).catch(() => undefined))?.isDirectory()) throw new ServiceError('naming_conflict', `A folder named "${baseName(this.path)}" exists.`);
      path = await this.c.publish(await this.c.resolveForWriter(this.state.temp), this.path, options.noReplace);
    } catch (e) {
      throw fsError(e, this.path);
    }
    return this.c.stat(path);
  }

  async abort(): Promise<void> {
    const h = this.handle;
    this.handle = undefined;
    await h?.then((x) => x.close()).catch(() => {});
    await unlink(await this.c.resolveForWriter(this.state.temp)).catch(() => {});
  }
}
