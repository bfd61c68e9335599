/**
 * `local`: a folder on this computer (the default account of a first run). Upstream paths map
 * onto the folder and are refused when they would leave it (`..`, symlinks pointing out).
 * Writes go to a hidden temporary file in the target folder and are renamed into place, so a
 * crash never leaves a half-written file under its final name. Deletion goes to the desktop
 * trash (freedesktop.org Trash spec) unless the account names its own trash folder.
 */
import { closeSync, constants as fsc, createWriteStream, existsSync, fchmod, fsync, futimes, fstatSync, lstatSync, openSync, realpathSync, renameSync, statSync, type Stats } from 'node:fs';
import { chmod, cp, link, lstat, mkdir, open, readdir, readFile, realpath, rename, rm, rmdir, stat, statfs, unlink, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { MULTIPART_MIN_SIZE } from '../../contract/limits';
import { ServiceError } from '../../errors';
import { defineConnector } from '../registry';
import { knownDate } from '../shared/dates';
import { ChangedMeanwhile } from '../shared/if-match';
import { MAX_PARTS, MiB, partSizeFor } from '../shared/parts';
import { modeAfter, permissionsOfMode } from '../shared/posix-permissions';
import { baseName, joinPath, MAX_NAME_BYTES, nameWithSuffix, parentOf, ROOT, TEMP_NAME, tempName } from '../shared/paths';
import type { ChunkWriter, Entry, NoReplace, Permission, PermissionChanges, Quota, RawChange, StorageConnector, StorageFeatures, Watcher, WriteFileOptions, WriteOptions } from '../types';
import { LocalChunkWriter } from './chunk-writer';
import { copyByFileSystem } from '../shared/file-copy';
import { fsError, specialFile } from '../shared/fs-errors';
import { COPY_OPTIONS, entryOf, etagOf, isSpecial } from './files';
import { watchFolder } from './watch';

// Calls on a descriptor opened synchronously (see writeFile), run in the I/O pool.
const fchmodAsync = promisify(fchmod);
const futimesAsync = promisify(futimes);
const fsyncAsync = promisify(fsync);

const options = z.object({
  path: z
    .string()
    .min(1)
    .refine((p) => isAbsolute(p), 'must be an absolute path')
    .refine((p) => existsSync(p) && statSync(p).isDirectory(), 'must be an existing folder')
    .meta({ title: 'Folder', description: 'Absolute path of the folder to use as this account.', placeholder: '/home/me/Documents' }),
  trashDir: z
    .string()
    .refine((p) => isAbsolute(p), 'must be an absolute path')
    .optional()
    .meta({ title: 'Trash folder', description: 'Where deleted files go; the desktop trash when empty.' }),
  syncWrites: z
    .boolean()
    .optional()
    .meta({
      title: 'Flush writes to disk',
      description: 'fsync each written file before it gets its name (default); off, a power cut may leave a written file empty, as after cp.',
      internal: true,
    }),
});
type Options = z.infer<typeof options>;

/** Trash spec: the Path key is URL-escaped per segment (RFC 2396), '/' kept. */
function trashInfoPath(abs: string): string {
  return abs.split('/').map(encodeURIComponent).join('/');
}

/** Longest name in the trash: its `.trashinfo` file must fit a file name too. */
const TRASH_NAME_BYTES = MAX_NAME_BYTES - Buffer.byteLength('.trashinfo');

/**
 * The n-th name for `name` in the trash's files/: `name`, then `stem.n.ext`, within
 * TRASH_NAME_BYTES. The spec lets files/ hold any name; the .trashinfo's Path keeps the whole
 * original.
 */
const trashName = (name: string, n: number): string => nameWithSuffix(name, n === 1 ? '' : `.${n}`, TRASH_NAME_BYTES);

/** The name of the user with this uid: this process's own user, or the number. */
function ownerName(uid: number): string {
  try {
    const me = userInfo();
    if (me.uid === uid) return me.username;
  } catch {
    /* no passwd entry */
  }
  return String(uid);
}

function localIsoDate(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Whether this computer's folders tell `a` from `A` (the defaults of APFS and NTFS do not). */
export const LOCAL_CASE_SENSITIVE = process.platform !== 'darwin' && process.platform !== 'win32';

export class LocalConnector implements StorageConnector {
  readonly features: StorageFeatures;
  /** The account's folder on this computer. */
  readonly root: string;
  private realRoot?: string;
  private readonly trashDir: string;
  private readonly watchers = new Set<Watcher>();
  /** fsync a written file before its rename (see the `syncWrites` option). */
  readonly syncWrites: boolean;

  constructor(opts: Options) {
    this.root = resolve(opts.path);
    this.syncWrites = opts.syncWrites ?? true;
    const dataHome = process.env.XDG_DATA_HOME && isAbsolute(process.env.XDG_DATA_HOME) ? process.env.XDG_DATA_HOME : join(homedir(), '.local', 'share');
    this.trashDir = opts.trashDir ? resolve(opts.trashDir) : join(dataHome, 'Trash');
    this.features = {
      caseSensitive: LOCAL_CASE_SENSITIVE,
      hashes: [],
      modTimePrecisionMs: 1,
      atomicWrites: true,
      noReplace: true,
      move: (from, to) => this.moveOrCopy(from, to, true),
      copy: (from, to) => this.moveOrCopy(from, to, false),
      localFile: (path) => this.localFile(path),
      writeFile: (path, file, o) => this.writeFile(path, file, o),
      trash: { put: (path) => this.trashPut(path), list: () => this.trashList(), restore: (trashPath) => this.trashRestore(trashPath) },
      quota: () => this.quota(),
      permissions: { list: (path) => this.permissions(path), update: (path, changes, o) => this.setPermissions(path, changes, o.replace) },
      watch: (onChanges, onError) => this.watch(onChanges, onError),
      partSizeFor: (size) => partSizeFor(size, MULTIPART_MIN_SIZE),
      openChunkWriter: (path, plan) => this.openChunkWriter(path, plan),
      resumeChunkWriter: (path, state) => this.resumeChunkWriter(path, state),
    };
  }

  // ---- paths -------------------------------------------------------------------------------

  /** The file system path of an upstream path; refuses `..`/`.` segments outright. */
  private abs(path: string): string {
    if (typeof path !== 'string' || !path.startsWith('/') || path.includes('\0')) throw new ServiceError('not_found', `"${path}" was not found.`);
    const segments = path.split('/').filter((s) => s.length > 0);
    if (segments.some((s) => s === '..' || s === '.' || (sep === '\\' && s.includes('\\')))) {
      throw new ServiceError('forbidden', `"${path}" is outside this account's folder.`);
    }
    return segments.length ? join(this.root, ...segments) : this.root;
  }

  private async rootReal(): Promise<string> {
    if (!this.realRoot) {
      try {
        this.realRoot = await realpath(this.root);
      } catch (e) {
        throw new ServiceError('service_not_available', `The folder ${this.root} is not available.`, {}, { cause: e });
      }
    }
    return this.realRoot;
  }

  private inside(real: string, rootReal: string): boolean {
    return real === rootReal || real.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep);
  }

  /**
   * The file system path of `path` after proving that it, or (when it does not exist yet) its
   * nearest existing ancestor, resolves inside the root: a symlink cannot lead out.
   */
  private async safe(path: string): Promise<string> {
    const abs = this.abs(path);
    const rootReal = await this.rootReal();
    let probe = abs;
    for (;;) {
      try {
        const real = await realpath(probe);
        if (!this.inside(real, rootReal)) throw new ServiceError('forbidden', `"${path}" is outside this account's folder.`);
        if (real !== this.unlinked(probe, rootReal)) this.refuseLoop(probe, path, rootReal);
        return abs;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if ((code === 'ENOENT' || code === 'ENOTDIR') && probe !== this.root) {
          probe = dirname(probe);
          continue;
        }
        throw fsError(e, path);
      }
    }
  }

  /**
   * The real path `abs` (under the root) has when no link is on its way: a realpath equal to it
   * proves there is none, so the loop check below runs only for paths through a link.
   */
  private unlinked(abs: string, rootReal: string): string {
    return abs === this.root ? rootReal : join(rootReal, abs.slice(this.root.length));
  }

  /** The real paths of the root and of each folder on the way down to `abs`, in order. */
  private realsAlong(abs: string, rootReal: string): string[] {
    const reals = [rootReal];
    const rel = relative(this.root, abs);
    let at = this.root;
    for (const segment of rel ? rel.split(sep) : []) {
      at = join(at, segment);
      reals.push(realpathSync.native(at));
    }
    return reals;
  }

  /**
   * Refuses a path through a link back to its own folder or one above it (`self -> .`,
   * `up -> ..`): listings leave such links out (see listStats), as each turn of the loop would
   * be the same files again, down to the kernel's 40 links.
   */
  private refuseLoop(abs: string, path: string, rootReal: string): void {
    let loops = false;
    try {
      const reals = this.realsAlong(abs, rootReal);
      const rel = relative(this.root, abs);
      let at = this.root;
      (rel ? rel.split(sep) : []).forEach((segment, i) => {
        at = join(at, segment);
        // reals[i + 1] is `at`'s: a link whose target is already on the way is the loop.
        if (!loops && lstatSync(at).isSymbolicLink() && reals.indexOf(reals[i + 1]) <= i) loops = true;
      });
    } catch {
      return; // changed meanwhile: the operation itself meets what is there now
    }
    if (loops) throw new ServiceError('forbidden', `"${path}" goes through a link back to a folder it is in.`);
  }

  /**
   * `safe` for a name about to be written, with what is there now (lstat; undefined when
   * nothing): proving the folder is enough, since the file is made in it and published by
   * rename or link, neither of which follows a symbolic link at the name. A link at the name
   * still gets the full check (one leading out is refused, as for any access). One realpath of
   * an existing folder instead of a failed one of the new name first (a thrown error per file).
   * Synchronous calls, as in `list`: on cached metadata each costs a fraction of a trip through
   * the I/O pool, which the copies' own reads, writes and fsyncs keep busy.
   */
  private async safeTarget(path: string): Promise<{ abs: string; existing?: Stats }> {
    const abs = this.abs(path);
    if (abs === this.root) return { abs: await this.safe(path), existing: await this.usable(abs, path) };
    const rootReal = await this.rootReal();
    let real: string;
    let existing: Stats | undefined;
    try {
      real = realpathSync.native(dirname(abs));
      existing = lstatSync(abs, { throwIfNoEntry: false });
    } catch {
      // A missing or unreadable folder: the full walk gives the documented error.
      return { abs: await this.safe(path) };
    }
    if (!this.inside(real, rootReal)) throw new ServiceError('forbidden', `"${path}" is outside this account's folder.`);
    if (real !== this.unlinked(dirname(abs), rootReal)) this.refuseLoop(dirname(abs), path, rootReal);
    if (!existing?.isSymbolicLink()) return { abs, existing };
    await this.safe(path);
    return { abs, existing: await stat(abs).catch(() => undefined) };
  }

  private toUpstream(abs: string): string {
    const rel = relative(this.root, abs);
    return rel ? `/${rel.split(sep).join('/')}` : ROOT;
  }

  // ---- core --------------------------------------------------------------------------------

  async stat(path: string): Promise<Entry> {
    const abs = await this.safe(path);
    return entryOf(path, await this.usable(abs, path));
  }

  /** stat() of a regular file or folder; special files are refused (see specialFile). */
  private async usable(abs: string, path: string): Promise<Stats> {
    let st: Stats;
    try {
      st = await stat(abs);
    } catch (e) {
      throw fsError(e, path);
    }
    if (isSpecial(st)) throw specialFile(path, undefined, st);
    return st;
  }

  async list(path: string): Promise<Entry[]> {
    return (await this.listStats(path)).map(({ name, st }) => entryOf(joinPath(path, name), st));
  }

  /**
   * The children of a folder as list() shows them (the same ones left out), with their stat
   * results instead of entries: a sync scan of a local account compares these without making
   * an `Entry` (two `Date`s and a raw object) per child.
   */
  async listStats(path: string): Promise<{ name: string; st: Stats }[]> {
    const abs = await this.safe(path);
    const rootReal = await this.rootReal();
    let dirents;
    try {
      dirents = await readdir(abs, { withFileTypes: true });
    } catch (e) {
      throw fsError(e, path);
    }
    const out: { name: string; st: Stats }[] = [];
    const prefix = abs.endsWith(sep) ? abs : abs + sep;
    // Real paths of this folder and those above it along `path`, made at the first link met.
    let along: Set<string> | undefined;
    // Synchronous stat calls, a batch between two turns of the event loop: on metadata the
    // kernel has cached, one costs a fraction of a promise round trip (a listing of 50,000
    // entries took 1–2 s with a promise per entry).
    for (let i = 0; i < dirents.length; i++) {
      if (i > 0 && i % 256 === 0) await new Promise((r) => setImmediate(r));
      const d = dirents[i];
      if (TEMP_NAME.test(d.name)) continue;
      const child = prefix + d.name;
      try {
        const real = d.isSymbolicLink() ? realpathSync.native(child) : undefined;
        if (real !== undefined && !this.inside(real, rootReal)) continue; // leads out: not ours to show
        const st = statSync(child, { throwIfNoEntry: false });
        if (!st || isSpecial(st)) continue; // vanished meanwhile; sockets, fifos, devices: see specialFile
        // A link back to this folder or one above it: every walk would go round it (refuseLoop).
        if (real !== undefined && st.isDirectory() && (along ??= new Set(this.realsAlong(abs, rootReal))).has(real)) continue;
        out.push({ name: d.name, st });
      } catch {
        continue; // a broken link, a loop, no permission
      }
    }
    return out;
  }

  async read(path: string, opts: { start?: number; end?: number } = {}): Promise<Readable> {
    const abs = await this.safe(path);
    await this.usable(abs, path);
    let handle: FileHandle;
    try {
      // O_NONBLOCK: should a FIFO take the file's place after the check above, opening it
      // returns at once instead of waiting for a writer; fstat below then refuses it.
      handle = await open(abs, fsc.O_RDONLY | fsc.O_NONBLOCK | fsc.O_NOCTTY);
    } catch (e) {
      throw fsError(e, path);
    }
    const st = await handle.stat().catch(async (e) => {
      await handle.close();
      throw fsError(e, path);
    });
    if (!st.isFile()) {
      await handle.close();
      if (st.isDirectory()) throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
      throw specialFile(path, undefined, st);
    }
    return handle.createReadStream({ start: opts.start, end: opts.end, autoClose: true, highWaterMark: MiB });
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    return this.writeThrough(path, opts, async (temp, mode) => {
      // `flush` fsyncs before close, so only complete bytes are published.
      const out = createWriteStream(temp, { flags: 'wx', mode, flush: this.syncWrites, highWaterMark: MiB });
      try {
        await pipeline(body, out, { signal: opts.signal });
      } catch (e) {
        // A body that fails before the file is open leaves the open under way: it still creates
        // the file, so the caller's removal waits for the stream's close.
        if (!out.closed) await once(out, 'close');
        throw e;
      }
    });
  }

  /**
   * One write into the hidden temporary file beside `path` (made by `fill`, with the mode of the
   * file it replaces), then its time and the publish; the temporary file is removed on failure.
   */
  private async writeThrough(path: string, opts: WriteOptions, fill: (temp: string, mode: number) => Promise<boolean | void>): Promise<Entry> {
    const { abs, existing } = await this.safeTarget(path);
    if (existing?.isDirectory()) throw new ServiceError('naming_conflict', `A folder named "${baseName(path)}" exists.`);
    const temp = join(dirname(abs), opts.tempName ?? tempName());
    let published: string;
    try {
      // `fill` answers true when it set the time itself (before its fsync).
      const timed = await fill(temp, existing ? existing.mode & 0o777 : 0o644);
      opts.signal?.throwIfAborted();
      if (opts.modified && !timed) await utimes(temp, opts.modified, opts.modified);
      if (opts.ifMatch !== undefined) {
        // A conditional replace: the look at the file there and the rename, one synchronous step.
        // Through a link at the name, as `stat` (which gave the ETag) looks.
        const now = statSync(abs, { throwIfNoEntry: false });
        if (!now?.isFile() || etagOf(now) !== opts.ifMatch) throw new ChangedMeanwhile(path);
        renameSync(temp, abs);
        published = path;
      } else {
        // `abs` was proved inside above; another name (noReplace.next) is proved by publish.
        published = await this.publish(temp, path, opts.noReplace, abs);
      }
    } catch (e) {
      await unlink(temp).catch(() => {});
      throw fsError(e, path);
    }
    // Published under the proved name: its entry needs no second walk of the path.
    if (published !== path) return this.stat(published);
    try {
      return entryOf(path, statSync(abs));
    } catch (e) {
      throw fsError(e, path);
    }
  }

  /** The file system path of the regular file at `path`, for `writeFile` of another local account. */
  private async localFile(path: string): Promise<string> {
    const abs = this.abs(path);
    let st: Stats | undefined;
    try {
      // Synchronous (see safeTarget); anything unusual gets the full check below and its error.
      // Through no link at all: a link inside gets the full check (loops, see refuseLoop).
      const rootReal = await this.rootReal();
      if (realpathSync.native(abs) === this.unlinked(abs, rootReal)) st = statSync(abs);
    } catch {
      st = undefined;
    }
    st ??= await this.usable(await this.safe(path), path);
    if (isSpecial(st)) throw specialFile(path, undefined, st);
    if (st.isDirectory()) throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
    return abs;
  }

  /**
   * `write` from a file on this computer: a copy by the file system (copy_file_range, or a
   * reflink where it clones; shared/file-copy.ts, counted as it grows, stopped by a cancel) into the
   * hidden temporary file, fsync, then the same publish as `write`.
   */
  async writeFile(path: string, file: string, opts: WriteFileOptions = {}): Promise<Entry> {
    // `path` is proved inside the root by writeThrough, before anything is written.
    let source: Stats;
    try {
      source = statSync(file);
    } catch (e) {
      throw fsError(e, file);
    }
    // A FIFO would block the copy until a writer appears (see specialFile).
    if (!source.isFile()) throw source.isDirectory() ? new ServiceError('invalid_parameters', `"${file}" is a folder.`) : specialFile(file, undefined, source);
    opts.signal?.throwIfAborted();
    return this.writeThrough(path, opts, async (temp, mode) => {
      await copyByFileSystem(file, temp, source.size, { signal: opts.signal, onBytes: opts.onBytes });
      // Opened synchronously (a lookup, see safeTarget); the calls that change the file stay in
      // the I/O pool: on a journaling file system they may wait for a commit another fsync started.
      const fd = openSync(temp, 'r');
      try {
        // The copy has the source's mode (less the umask, when `cp` made it): changed only when not the target's.
        if ((fstatSync(fd).mode & 0o7777) !== mode) await fchmodAsync(fd, mode);
        // The time is set before the fsync, which makes it durable with the bytes.
        if (opts.modified) await futimesAsync(fd, opts.modified, opts.modified);
        if (this.syncWrites) await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
      return !!opts.modified;
    });
  }

  /**
   * Gives the finished temporary file `temp` (a file system path) its name `path`: a rename,
   * which replaces; or, with `noReplace`, link(temp, final) + unlink(temp), where EEXIST means the
   * name is taken (then `noReplace.next`). Returns the upstream path the file went to.
   */
  async publish(temp: string, path: string, noReplace?: NoReplace, proved?: string): Promise<string> {
    // `proved`: the file system path of `path`, just checked by safe() (one realpath walk less per write).
    if (!noReplace) {
      await rename(temp, proved ?? (await this.safe(path)));
      return path;
    }
    for (let target: string | undefined = path; target !== undefined; target = await noReplace.next?.(target)) {
      const abs = target === path && proved ? proved : await this.safe(target);
      try {
        await link(temp, abs);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue;
        // File systems without hard links (FAT, some network mounts): check, then rename.
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw e;
        if (await lstat(abs).then(() => true, () => false)) continue;
        await rename(temp, abs);
        return target;
      }
      await unlink(temp);
      return target;
    }
    throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
  }

  async mkdir(path: string): Promise<Entry> {
    const abs = await this.safe(path);
    try {
      await mkdir(abs);
    } catch (e) {
      throw fsError(e, path);
    }
    return this.stat(path);
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    if (path === ROOT) throw new ServiceError('forbidden', 'The root folder cannot be deleted.');
    const abs = await this.safe(path);
    try {
      const st = await lstat(abs);
      if (!st.isDirectory()) await unlink(abs);
      else if (recursive) await rm(abs, { recursive: true });
      else await rmdir(abs);
    } catch (e) {
      throw fsError(e, path);
    }
  }

  private async moveOrCopy(from: string, to: string, move: boolean): Promise<Entry> {
    if (from === ROOT) throw new ServiceError('forbidden', 'The root folder cannot be moved or copied this way.');
    const src = await this.safe(from);
    const dest = await this.safe(to);
    if (to === from || to.startsWith(from + '/')) throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    await this.usable(src, from);
    try {
      // rename() silently replaces files: `to` must not exist (the service picks free names).
      if (await lstat(dest).then(() => true, () => false)) throw new ServiceError('naming_conflict', `"${baseName(to)}" already exists.`);
      if (move) {
        try {
          await rename(src, dest);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
          // Another device below the root (a mount point): copy, then remove the source.
          await cp(src, dest, COPY_OPTIONS);
          await rm(src, { recursive: true });
        }
      } else if ((await lstat(src)).isFile()) {
        // A file: published whole under its name (never a partial copy there), its time kept.
        const st = await stat(src);
        return await this.writeFile(to, src, { modified: knownDate(st.mtime) ?? undefined, noReplace: {} });
      } else {
        await cp(src, dest, COPY_OPTIONS);
      }
    } catch (e) {
      throw fsError(e, (e as NodeJS.ErrnoException).path === dest ? to : from);
    }
    return this.stat(to);
  }

  async quota(): Promise<Quota> {
    try {
      const s = await statfs(this.root);
      return { used: (s.blocks - s.bfree) * s.bsize, total: s.blocks * s.bsize };
    } catch (e) {
      throw fsError(e, ROOT);
    }
  }

  // ---- permissions (POSIX modes, connectors/shared/posix-permissions.ts) ----------------------

  private async permissions(path: string): Promise<Permission[]> {
    const st = await stat(await this.safe(path)).catch((e) => {
      throw fsError(e, path);
    });
    return permissionsOfMode(st.mode, ownerName(st.uid));
  }

  private async setPermissions(path: string, changes: PermissionChanges, replace: boolean): Promise<Permission[]> {
    const abs = await this.safe(path);
    try {
      const st = await stat(abs);
      await chmod(abs, modeAfter(st.mode, st.isDirectory() ? 'folder' : 'file', changes, replace) & 0o7777);
    } catch (e) {
      throw fsError(e, path);
    }
    return this.permissions(path);
  }

  // ---- trash (freedesktop.org Trash specification 1.0) ----------------------------------------

  private async trashPut(path: string): Promise<string> {
    if (path === ROOT) throw new ServiceError('forbidden', 'The root folder cannot be deleted.');
    const abs = await this.safe(path);
    await lstat(abs).catch((e) => Promise.reject(fsError(e, path)));
    const files = join(this.trashDir, 'files');
    const info = join(this.trashDir, 'info');
    await mkdir(files, { recursive: true, mode: 0o700 });
    await mkdir(info, { recursive: true, mode: 0o700 });
    const content = `[Trash Info]\nPath=${trashInfoPath(abs)}\nDeletionDate=${localIsoDate(new Date())}\n`;
    // The .trashinfo file, created exclusively, reserves the name (spec: "atomic" creation).
    for (let n = 1; n < 100_000; n++) {
      const name = trashName(baseName(path), n);
      try {
        await writeFile(join(info, `${name}.trashinfo`), content, { flag: 'wx', mode: 0o600 });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw fsError(e, path);
      }
      if (await lstat(join(files, name)).then(() => true, () => false)) {
        await unlink(join(info, `${name}.trashinfo`));
        continue;
      }
      try {
        await rename(abs, join(files, name)).catch(async (e) => {
          if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
          await cp(abs, join(files, name), COPY_OPTIONS);
          await rm(abs, { recursive: true });
        });
      } catch (e) {
        await unlink(join(info, `${name}.trashinfo`)).catch(() => {});
        throw fsError(e, path);
      }
      return `/${name}`;
    }
    throw new ServiceError('naming_conflict', `No free name in the trash for "${baseName(path)}".`);
  }

  /** Back to the Path its .trashinfo records, when that is inside this account's folder and free. */
  private async trashRestore(trashPath: string): Promise<Entry> {
    const name = baseName(trashPath);
    const infoFile = join(this.trashDir, 'info', `${name}.trashinfo`);
    const infoText = await readFile(infoFile, 'utf8').catch(() => '');
    const original = /^Path=(.*)$/m.exec(infoText)?.[1];
    if (!original) throw new ServiceError('not_found', `"${name}" is no longer in the trash.`);
    const abs = resolve(decodeURIComponent(original));
    const rel = relative(this.root, abs);
    if (!rel || rel.startsWith('..') || isAbsolute(rel)) throw new ServiceError('forbidden', `"${name}" was deleted from outside this account's folder.`);
    const path = this.toUpstream(abs);
    const target = await this.safe(path);
    await mkdir(dirname(target), { recursive: true }).catch((e) => Promise.reject(fsError(e, parentOf(path))));
    // link()+unlink() would not take folders; a rename over nothing is the no-replace step here.
    if (await lstat(target).then(() => true, () => false)) throw new ServiceError('naming_conflict', `"${baseName(path)}" exists again where it was deleted from.`);
    await rename(join(this.trashDir, 'files', name), target).catch(async (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw fsError(e, path);
      await cp(join(this.trashDir, 'files', name), target, COPY_OPTIONS);
      await rm(join(this.trashDir, 'files', name), { recursive: true });
    });
    await unlink(infoFile).catch(() => {});
    return this.stat(path);
  }

  private async trashList(): Promise<Entry[]> {
    const files = join(this.trashDir, 'files');
    const names = await readdir(files).catch(() => [] as string[]);
    const out: Entry[] = [];
    for (const name of names) {
      const st = await lstat(join(files, name)).catch(() => undefined);
      if (!st) continue;
      const infoText = await readFile(join(this.trashDir, 'info', `${name}.trashinfo`), 'utf8').catch(() => '');
      const escaped = /^Path=(.*)$/m.exec(infoText)?.[1];
      const original = escaped ? decodeURIComponent(escaped) : null;
      const deleted = /^DeletionDate=(.*)$/m.exec(infoText)?.[1];
      const entry = entryOf(`/${name}`, st, { originalPath: original, deletionDate: deleted ?? null });
      // A name too long to keep whole in files/ (trashName) is shown as it was.
      const was = original ? basename(original) : '';
      if (was !== name && Buffer.byteLength(was) > TRASH_NAME_BYTES) entry.name = was;
      out.push(entry);
    }
    return out;
  }

  // ---- watch -------------------------------------------------------------------------------

  private async watch(onChanges: (changes: RawChange[]) => void, onError: (e: Error) => void): Promise<Watcher> {
    const inner = await watchFolder(this.root, (abs) => this.toUpstream(abs), onChanges, onError);
    const handle: Watcher = {
      close: async () => {
        this.watchers.delete(handle);
        await inner.close();
      },
    };
    this.watchers.add(handle);
    return handle;
  }

  // ---- chunked uploads: positional writes into a hidden file beside the target ----------------

  private async openChunkWriter(path: string, plan: { size: number; partSize: number }): Promise<ChunkWriter> {
    if (!Number.isSafeInteger(plan.size) || plan.size < 0) throw new ServiceError('invalid_parameters', 'The upload size must be a whole number of bytes.');
    if (!Number.isSafeInteger(plan.partSize) || plan.partSize < 1) throw new ServiceError('invalid_parameters', 'The part size must be positive.');
    if (Math.ceil(plan.size / plan.partSize) > MAX_PARTS) throw new ServiceError('invalid_parameters', `At most ${MAX_PARTS} parts are allowed.`);
    const abs = await this.safe(path);
    const temp = joinPath(parentOf(path), tempName('upload'));
    try {
      const h = await open(join(dirname(abs), baseName(temp)), 'wx', 0o644);
      await h.truncate(plan.size);
      await h.close();
    } catch (e) {
      throw fsError(e, path);
    }
    return new LocalChunkWriter(this, path, { temp, size: plan.size, partSize: plan.partSize });
  }

  private async resumeChunkWriter(path: string, state: Record<string, unknown>): Promise<ChunkWriter> {
    const { temp, size, partSize } = state as { temp?: unknown; size?: unknown; partSize?: unknown };
    if (typeof temp !== 'string' || typeof size !== 'number' || typeof partSize !== 'number' || parentOf(temp) !== parentOf(path) || !TEMP_NAME.test(baseName(temp))) {
      throw new ServiceError('invalid_parameters', 'This upload cannot be resumed: its saved state is invalid.');
    }
    const st = await stat(await this.safe(temp)).catch(() => undefined);
    if (!st || st.size !== size) throw new ServiceError('not_found', 'This upload cannot be resumed: its temporary file is gone.');
    return new LocalChunkWriter(this, path, { temp, size, partSize });
  }

  /** For the chunk writer: a safe file system path (kept private to this module otherwise). */
  resolveForWriter(path: string): Promise<string> {
    return this.safe(path);
  }

  async close(): Promise<void> {
    await Promise.all([...this.watchers].map((w) => w.close()));
  }
}


export default defineConnector({
  id: 'local',
  name: 'This computer',
  kind: 'storage',
  group: 'local',
  options,
  fromImport: (body) => ({ path: body.path, ...(body.trash_dir !== undefined ? { trashDir: body.trash_dir } : {}) }),
  describe: (o) => `local:${o.path}`,
  create: (o) => new LocalConnector(o),
});
