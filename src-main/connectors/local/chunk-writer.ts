/**
 * Chunked uploads on this computer: positional writes into a hidden file beside the target,
 * parts in any order and in parallel, published under the final name on complete. Each part
 * opens the file for its own writes: a session can wait for days between parts, or outlive the
 * process that started it, and should not hold a descriptor meanwhile (one open per part of
 * megabytes costs nothing measurable).
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

  /** Runs `use` on the hidden file, opened for it and closed after. */
  private async withFile<T>(use: (h: FileHandle) => Promise<T>): Promise<T> {
    const h = await open(await this.c.resolveForWriter(this.state.temp), 'r+');
    try {
      return await use(h);
    } finally {
      await h.close();
    }
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
      await this.withFile(async (h) => {
        for (let done = 0; done < body.length; ) done += (await h.write(body, done, body.length - done, offset + done)).bytesWritten;
      });
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
      // fsync flushes the file's pages whichever descriptor wrote them.
      if (this.c.syncWrites) await this.withFile((h) => h.sync());
      const target = await this.c.resolveForWriter(this.path);
      if ((await stat(target).catch(() => undefined))?.isDirectory()) throw new ServiceError('naming_conflict', `A folder named "${baseName(this.path)}" exists.`);
      path = await this.c.publish(await this.c.resolveForWriter(this.state.temp), this.path, options.noReplace);
    } catch (e) {
      throw fsError(e, this.path);
    }
    return this.c.stat(path);
  }

  async abort(): Promise<void> {
    await unlink(await this.c.resolveForWriter(this.state.temp)).catch(() => {});
  }
}
