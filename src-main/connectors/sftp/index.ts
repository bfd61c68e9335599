/**
 * `sftp`: any SSH server with the SFTP subsystem (OpenSSH, NAS boxes, hosting). One SSH
 * connection per account (session.ts), opened lazily, kept alive, and reopened after a drop. The
 * host key is pinned trust-on-first-use in `<dataDir>/connectors/sftp/known_hosts.json`; a
 * changed key is refused until the user confirms the new fingerprint (`hostKeyFingerprint`).
 *
 * Writes go to a hidden temporary name in the target folder and are renamed over the final
 * name once every byte is in (posix-rename@openssh.com, which replaces atomically, where the
 * server offers it), so an interrupted upload never leaves a partial file under the final name.
 */
import { stat as statLocal } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { ServiceError } from '../../errors';
import { checkStillMatches } from '../shared/if-match';
import { partSizeFor } from '../shared/parts';
import { modeAfter, permissionsOfMode } from '../shared/posix-permissions';
import { assertFree, baseName, joinPath, parentOf, ROOT, TEMP_NAME, tempName } from '../shared/paths';
import type { ChunkWriter, Entry, NoReplace, PartReceipt, Permission, PermissionChanges, ReadOptions, ReadToFileOptions, StorageConnector, StorageFeatures, WriteOptions } from '../types';
import { mapError, unavailable } from './errors';
import { call, SftpSessions, type Session } from './session';
import type { SftpOptions } from './options';
import { streamIntoFile } from '../shared/sinks';
import { pipelinedRead, pipelinedReaddir, pipelinedWrite } from './streams';

/** How often a download into a file reports the bytes written since the last report. */

export class SftpConnector implements StorageConnector {
  readonly features: StorageFeatures;
  private readonly sessions: SftpSessions;

  constructor(
    private readonly o: SftpOptions,
    dataDir: string,
  ) {
    this.sessions = new SftpSessions(o, dataDir);
    const serverCopy = (from: string, to: string) => this.copy(from, to);
    const offersCopy = () => Boolean(this.sessions.current?.alive && this.sessions.current.sftp._extensions?.['copy-data'] === '1');
    this.features = {
      caseSensitive: true,
      hashes: [],
      modTimePrecisionMs: 1000,
      atomicWrites: true,
      noReplace: true,
      move: (from, to) => this.move(from, to),
      // Server-side copy exists only where the server announced "copy-data" (OpenSSH ≥ 9.0);
      // known once connected, so a getter: before the first connection the service streams.
      get copy() {
        return offersCopy() ? serverCopy : undefined;
      },
      copyFilesOnly: true,
      quota: () => this.quota(),
      permissions: { list: (path) => this.permissions(path), update: (path, changes, o) => this.setPermissions(path, changes, o.replace) },
      readToFile: (path, file, opts) => this.readToFile(path, file, opts),
      openChunkWriter: (path, plan) => this.openChunkWriter(path, plan),
      resumeChunkWriter: (path, state) => this.resumeChunkWriter(path, state),
      partSizeFor: (size) => partSizeFor(size),
    };
  }

  private abs(s: Session, path: string): string {
    return path === ROOT ? s.home : s.home === '/' ? path : s.home + path;
  }

  // ---- core -------------------------------------------------------------------------------

  private toEntry(path: string, attrs: any, raw?: Record<string, unknown>): Entry {
    const folder = attrs.isDirectory();
    const modified = attrs.mtime ? new Date(attrs.mtime * 1000) : null;
    return {
      path,
      name: baseName(path),
      kind: folder ? 'folder' : 'file',
      size: folder ? null : Number(attrs.size),
      modified,
      created: null,
      etag: folder ? undefined : `${attrs.mtime}-${attrs.size}`,
      raw: raw ?? { mode: attrs.mode, uid: attrs.uid, gid: attrs.gid, mtime: attrs.mtime, atime: attrs.atime },
    };
  }

  async stat(path: string): Promise<Entry> {
    return this.sessions.idempotent(async (s) => {
      try {
        return this.toEntry(path, await call((cb) => s.sftp.stat(this.abs(s, path), cb)));
      } catch (e) {
        throw mapError(e, `"${path}"`, s);
      }
    });
  }

  async list(path: string): Promise<Entry[]> {
    return this.sessions.idempotent(async (s) => {
      let items: { filename: string; attrs: any }[];
      try {
        items = await pipelinedReaddir(s.sftp, this.abs(s, path));
      } catch (e) {
        const err = mapError(e, `"${path}"`, s);
        // Listing a file fails with "no such file" (OpenSSH) or a generic status: say what it is.
        if (err.code !== 'service_not_available') {
          const st = await call<any>((cb) => s.sftp.stat(this.abs(s, path), cb)).catch(() => undefined);
          if (st && !st.isDirectory()) throw new ServiceError('invalid_parent_folder', `"${path}" is not a folder.`);
        }
        throw err;
      }
      const out: Entry[] = [];
      for (const it of items) {
        if (it.filename === '.' || it.filename === '..' || TEMP_NAME.test(it.filename)) continue;
        let attrs = it.attrs;
        // A symlink is shown as what it points to; a dangling one is left out.
        if ((attrs.mode & 0o170000) === 0o120000) {
          attrs = await call((cb) => s.sftp.stat(this.abs(s, joinPath(path, it.filename)), cb)).catch(() => undefined);
          if (!attrs) continue;
        }
        // The name as the server has it (no Unicode normalisation): every later call sends this
        // path back, and a Linux server holds `é` as one or two characters as two distinct names.
        out.push(this.toEntry(joinPath(path, it.filename), attrs));
      }
      return out;
    });
  }

  async read(path: string, opts: ReadOptions = {}): Promise<Readable> {
    return this.sessions.idempotent(async (s) => {
      const abs = this.abs(s, path);
      let handle: Buffer;
      let st: any;
      try {
        st = await call<any>((cb) => s.sftp.stat(abs, cb));
        if (st.isDirectory()) throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
        handle = await call<Buffer>((cb) => s.sftp.open(abs, 'r', cb));
      } catch (e) {
        throw mapError(e, `"${path}"`, s);
      }
      const size = Number(st.size);
      const start = opts.start ?? 0;
      const end = Math.min(opts.end === undefined ? size : opts.end + 1, size);
      const stream = pipelinedRead(s.sftp, handle, start, end, (e) => mapError(e, `Reading "${path}"`, s));
      const cancel = () => stream.destroy(new ServiceError('request_timeout', 'The download was cancelled.'));
      // Cancelled while the file was being opened: the listener would never run.
      if (opts.signal?.aborted) cancel();
      else opts.signal?.addEventListener('abort', cancel, { once: true });
      const onDead = () => stream.destroy(unavailable(`Reading "${path}"`, new Error('the connection dropped')));
      s.onDead.add(onDead);
      stream.once('close', () => s.onDead.delete(onDead));
      return stream;
    });
  }

  /**
   * `read` straight into a local file: piped into a file stream, the pipelined reads fill a few
   * reused buffers that are written as they come (streams.ts), with none of a downloader's
   * stream stages in between. Going on from `start` takes a partial file of that many bytes.
   */
  private async readToFile(path: string, file: string, opts: ReadToFileOptions = {}): Promise<number | null> {
    const start = opts.start ?? 0;
    if (start > 0 && (await statLocal(file).catch(() => null))?.size !== start) return null;
    opts.signal?.throwIfAborted();
    return streamIntoFile(await this.read(path, { start, signal: opts.signal }), file, { start, onBytes: opts.onBytes });
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    const s = await this.sessions.get();
    const temp = joinPath(parentOf(path), opts.tempName ?? tempName());
    const absTemp = this.abs(s, temp);
    let handle: Buffer;
    try {
      handle = await call<Buffer>((cb) => s.sftp.open(absTemp, 'w', { mode: 0o644 }, cb));
    } catch (e) {
      throw mapError(e, `Writing "${path}"`, s);
    }
    const out = pipelinedWrite(s.sftp, handle);
    const onDead = () => out.destroy(unavailable(`Writing "${path}"`, new Error('the connection dropped')));
    s.onDead.add(onDead);
    try {
      await pipeline(body, out, { signal: opts.signal });
      if (!s.alive) throw new ServiceError('service_not_available', `The connection to ${this.o.host} dropped during the upload.`);
      if (opts.modified) {
        const t = Math.floor(opts.modified.getTime() / 1000);
        await call((cb) => s.sftp.utimes(absTemp, t, t, cb)).catch(() => {});
      }
      // SFTP has no conditional rename: the file is looked at right before it.
      await checkStillMatches((p) => this.stat(p), path, opts.ifMatch);
      path = await this.publish(s, temp, path, opts.noReplace);
    } catch (e) {
      if (s.alive) await call((cb) => s.sftp.unlink(absTemp, cb)).catch(() => {});
      throw mapError(e, `Writing "${path}"`, s);
    } finally {
      s.onDead.delete(onDead);
    }
    return this.stat(path);
  }

  /**
   * Gives the finished `temp` its name: replacing (see `replace`), or with `noReplace` by the
   * protocol's plain SSH_FXP_RENAME, which OpenSSH refuses when the target exists (then
   * `noReplace.next`). Returns the path the file went to.
   */
  private async publish(s: Session, temp: string, path: string, noReplace?: NoReplace): Promise<string> {
    if (!noReplace) {
      await this.replace(s, temp, path);
      return path;
    }
    for (let target: string | undefined = path; target !== undefined; target = await noReplace.next?.(target)) {
      const to = this.abs(s, target);
      try {
        await call((cb) => s.sftp.rename(this.abs(s, temp), to, cb));
        return target;
      } catch (e) {
        const exists = await call((cb) => s.sftp.lstat(to, cb)).then(
          () => true,
          () => false,
        );
        if (!exists) throw e;
      }
    }
    throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
  }

  /** Renames `temp` over `path`: atomically with posix-rename, else delete-then-rename. */
  private async replace(s: Session, temp: string, path: string): Promise<void> {
    const from = this.abs(s, temp);
    const to = this.abs(s, path);
    if (s.sftp._extensions?.['posix-rename@openssh.com'] === '1') {
      await call((cb) => s.sftp.ext_openssh_rename(from, to, cb));
      return;
    }
    const existing = await call<any>((cb) => s.sftp.stat(to, cb)).catch(() => undefined);
    if (existing?.isDirectory()) throw new ServiceError('naming_conflict', `A folder named "${baseName(path)}" exists.`);
    if (existing) await call((cb) => s.sftp.unlink(to, cb));
    await call((cb) => s.sftp.rename(from, to, cb));
  }

  async mkdir(path: string): Promise<Entry> {
    const s = await this.sessions.get();
    try {
      await call((cb) => s.sftp.mkdir(this.abs(s, path), cb));
    } catch (e) {
      const exists = await call((cb) => s.sftp.stat(this.abs(s, path), cb)).then(
        () => true,
        () => false,
      );
      if (exists) throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
      throw mapError(e, `Creating "${path}"`, s);
    }
    return this.stat(path);
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    const s = await this.sessions.get();
    const entry = await this.stat(path);
    try {
      if (entry.kind === 'file') {
        await call((cb) => s.sftp.unlink(this.abs(s, path), cb));
        return;
      }
      const children = await call<any[]>((cb) => s.sftp.readdir(this.abs(s, path), cb));
      if (children.length > 0 && !recursive) throw new ServiceError('folder_not_empty', `The folder "${entry.name}" is not empty.`);
      for (const c of children) {
        const child = joinPath(path, c.filename);
        if ((c.attrs.mode & 0o170000) === 0o040000) await this.remove(child, { recursive: true });
        else await call((cb) => s.sftp.unlink(this.abs(s, child), cb));
      }
      await call((cb) => s.sftp.rmdir(this.abs(s, path), cb));
    } catch (e) {
      throw mapError(e, `Deleting "${path}"`, s);
    }
  }

  async close(): Promise<void> {
    await this.sessions.close();
  }

  // ---- features ---------------------------------------------------------------------------

  private async move(from: string, to: string): Promise<Entry> {
    await assertFree((p) => this.stat(p), to);
    const s = await this.sessions.get();
    try {
      await call((cb) => s.sftp.rename(this.abs(s, from), this.abs(s, to), cb));
    } catch (e) {
      throw mapError(e, `Moving "${from}"`, s);
    }
    return this.stat(to);
  }

  /**
   * Server-side copy of one file with the "copy-data" extension: the bytes never leave the
   * server. Files only (`copyFilesOnly`): the storage service copies folder trees itself.
   */
  private async copy(from: string, to: string): Promise<Entry> {
    if ((await this.stat(from)).kind === 'folder') throw new ServiceError('invalid_parameters', `"${from}" is a folder; the server copies files only.`);
    await assertFree((p) => this.stat(p), to);
    const s = await this.sessions.get();
    const temp = joinPath(parentOf(to), tempName());
    let rh: Buffer | undefined;
    let wh: Buffer | undefined;
    try {
      rh = await call<Buffer>((cb) => s.sftp.open(this.abs(s, from), 'r', cb));
      wh = await call<Buffer>((cb) => s.sftp.open(this.abs(s, temp), 'w', cb));
      // length 0 = "to the end of the source" (copy-data extension).
      await call((cb) => s.sftp.ext_copy_data(rh, 0, 0, wh, 0, cb));
      await call((cb) => s.sftp.close(wh, cb));
      wh = undefined;
      await this.replace(s, temp, to);
    } catch (e) {
      if (wh) await call((cb) => s.sftp.close(wh, cb)).catch(() => {});
      if (s.alive) await call((cb) => s.sftp.unlink(this.abs(s, temp), cb)).catch(() => {});
      throw mapError(e, `Copying "${from}"`, s);
    } finally {
      if (rh) await call((cb) => s.sftp.close(rh, cb)).catch(() => {});
    }
    return this.stat(to);
  }

  // ---- permissions (POSIX modes, connectors/shared/posix-permissions.ts) ----------------------

  private async permissions(path: string): Promise<Permission[]> {
    return this.sessions.idempotent(async (s) => {
      try {
        const attrs = await call<any>((cb) => s.sftp.stat(this.abs(s, path), cb));
        // SFTP v3 names no users: the owner is its uid.
        return permissionsOfMode(attrs.mode, `uid ${attrs.uid}`);
      } catch (e) {
        throw mapError(e, `"${path}"`, s);
      }
    });
  }

  private async setPermissions(path: string, changes: PermissionChanges, replace: boolean): Promise<Permission[]> {
    // Idempotent: the same changes applied twice give the same mode.
    await this.sessions.idempotent(async (s) => {
      const abs = this.abs(s, path);
      try {
        const attrs = await call<any>((cb) => s.sftp.stat(abs, cb));
        const mode = modeAfter(attrs.mode, attrs.isDirectory() ? 'folder' : 'file', changes, replace) & 0o7777;
        await call((cb) => s.sftp.chmod(abs, mode, cb));
      } catch (e) {
        throw e instanceof ServiceError ? e : mapError(e, `"${path}"`, s);
      }
    });
    return this.permissions(path);
  }

  private async quota() {
    const s = await this.sessions.get();
    if (s.sftp._extensions?.['statvfs@openssh.com'] !== '2') return { used: null, total: null };
    const v = await call<any>((cb) => s.sftp.ext_openssh_statvfs(s.home, cb)).catch(() => undefined);
    if (!v) return { used: null, total: null };
    // statvfs@openssh.com fields, as ssh2 names them (f_blocks in units of f_frsize).
    const unit = Number(v.f_frsize) || Number(v.f_bsize);
    const total = Number(v.f_blocks) * unit;
    if (!Number.isFinite(total) || total <= 0) return { used: null, total: null };
    return { used: total - Number(v.f_bfree) * unit, total };
  }

  /**
   * Multipart by offset writes into one hidden temporary file; parts can go in parallel and
   * in any order. complete() checks the size and renames it over the final name.
   */
  private async openChunkWriter(path: string, plan: { size: number; partSize: number }): Promise<ChunkWriter> {
    const s = await this.sessions.get();
    const temp = joinPath(parentOf(path), tempName('upload'));
    try {
      const h = await call<Buffer>((cb) => s.sftp.open(this.abs(s, temp), 'w', cb));
      await call((cb) => s.sftp.close(h, cb));
    } catch (e) {
      throw mapError(e, `Writing "${path}"`, s);
    }
    return this.chunkWriter(path, { temp, size: plan.size, partSize: plan.partSize });
  }

  private async resumeChunkWriter(path: string, state: Record<string, unknown>): Promise<ChunkWriter> {
    const st = z.object({ temp: z.string(), size: z.number().int().min(0), partSize: z.number().int().min(1) }).safeParse(state);
    if (!st.success || parentOf(st.data.temp) !== parentOf(path) || !TEMP_NAME.test(baseName(st.data.temp))) {
      throw new ServiceError('invalid_parameters', 'This upload cannot be resumed: its saved state is not valid.');
    }
    await this.stat(st.data.temp).catch((e) => {
      throw e instanceof ServiceError && e.code === 'not_found' ? new ServiceError('not_found', 'The partial upload is gone from the server; start it again.') : e;
    });
    return this.chunkWriter(path, st.data);
  }

  private chunkWriter(path: string, state: { temp: string; size: number; partSize: number }): ChunkWriter {
    const { temp, size, partSize } = state;
    const parts = Math.max(1, Math.ceil(size / partSize));
    return {
      partSize,
      parallel: true,
      state: { ...state },
      writePart: async (partNumber: number, body: Buffer): Promise<PartReceipt> => {
        if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > parts) {
          throw new ServiceError('invalid_parameters', `Part ${partNumber} is out of range (1–${parts}).`);
        }
        const expected = partNumber < parts ? partSize : size - partSize * (parts - 1);
        if (body.length !== expected) throw new ServiceError('invalid_parameters', `Part ${partNumber} must be ${expected} bytes, not ${body.length}.`);
        const s = await this.sessions.get();
        const abs = this.abs(s, temp);
        let h: Buffer | undefined;
        try {
          h = await call<Buffer>((cb) => s.sftp.open(abs, 'r+', cb));
          const offset = (partNumber - 1) * partSize;
          for (let done = 0; done < body.length; ) {
            const n = Math.min(body.length - done, 256 * 1024);
            await call((cb) => s.sftp.write(h, body, done, n, offset + done, cb));
            done += n;
          }
        } catch (e) {
          throw mapError(e, `Writing part ${partNumber} of "${path}"`, s);
        } finally {
          if (h) await call((cb) => s.sftp.close(h, cb)).catch(() => {});
        }
        return { partNumber, size: body.length };
      },
      complete: async (receipts: PartReceipt[], options: { noReplace?: NoReplace } = {}): Promise<Entry> => {
        const numbers = new Set(receipts.map((r) => r.partNumber));
        for (let n = 1; n <= parts; n++) if (!numbers.has(n)) throw new ServiceError('invalid_parameters', `Part ${n} was not uploaded.`);
        const s = await this.sessions.get();
        const st = await this.stat(temp);
        if (st.size !== size) throw new ServiceError('conflict', `The uploaded parts hold ${st.size} bytes, not ${size}.`);
        let published: string;
        try {
          published = await this.publish(s, temp, path, options.noReplace);
        } catch (e) {
          throw mapError(e, `Finishing "${path}"`, s);
        }
        return this.stat(published);
      },
      abort: async () => {
        const s = await this.sessions.get();
        await call((cb) => s.sftp.unlink(this.abs(s, temp), cb)).catch(() => {});
      },
    };
  }
}

