/**
 * Several files, or folders, as one zip stream (the web UI's download of a selection): entries
 * are read one after another from the account's backend and written into the archive as they
 * arrive, so nothing is held in memory or on disk and the first bytes go out at once. Folders
 * are walked recursively; an empty folder is kept as a directory entry.
 */
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import type { Archiver, ArchiverOptions } from 'archiver';
import { joinPath } from '../connectors/shared/paths';
import type { StorageConnector } from '../connectors/types';
import { ServiceError } from '../errors';
import type { StorageService } from '../services/storage';

/** At most this many entries in one archive (a mistaken selection of a whole drive). */
export const ZIP_MAX_ENTRIES = 100_000;

/** One entry to write: a file read when its turn comes, or a folder. */
type Planned = { name: string; kind: 'folder' } | { name: string; kind: 'file'; modified: Date | null; open(): Promise<Readable> };

/** The archive's file name: the one item's name, else the folder the items are in. */
export function zipName(names: string[], folderName: string): string {
  const base = names.length === 1 ? names[0] : folderName || 'Tributary';
  return `${base}.zip`;
}

/**
 * Plans and streams the zip of `ids` (files and folders of one account). Planning happens up
 * front, so an id that does not exist fails before any byte is sent.
 */
export async function zipOf(storage: StorageService, account: number, ids: string[]): Promise<{ name: string; stream: Readable }> {
  const plan: Planned[] = [];
  const names: string[] = [];
  let folderName = '';
  for (const id of ids) {
    const r = await storage.get(account, id);
    names.push(r.name);
    folderName = r.parent?.name ?? folderName;
    if (r.kind === 'file') {
      plan.push({ name: r.name, kind: 'file', modified: r.modified ? new Date(r.modified) : null, open: async () => (await storage.download(account, id)).stream });
    } else {
      const loc = await storage.locate(account, id);
      plan.push({ name: `${r.name}/`, kind: 'folder' });
      await walk(loc.connector, loc.path, r.name, plan);
    }
    if (plan.length > ZIP_MAX_ENTRIES) throw new ServiceError('payload_too_large', `A zip download holds at most ${ZIP_MAX_ENTRIES} entries.`);
  }
  // Loaded with the first zip. archiver 8 exports its formats as classes (its bundled types
  // still describe the v7 factory).
  const { ZipArchive } = (await import('archiver')) as unknown as { ZipArchive: new (options?: ArchiverOptions) => Archiver };
  // Fast compression: most large files (media, archives) are compressed already.
  const archive = new ZipArchive({ zlib: { level: 1 } });
  // The archive closed: its reader went away (a cancelled download) or it failed. Stop waiting
  // for entries and release the one being read, which archiver never destroys (an open file, an
  // smbclient held on its FIFO, an SFTP handle, a socket).
  const gone = new AbortController();
  let current: Readable | undefined;
  archive.once('close', () => {
    gone.abort();
    current?.destroy();
  });
  void (async () => {
    try {
      for (const p of plan) {
        if (p.kind === 'folder') archive.append(Buffer.alloc(0), { name: p.name, type: 'directory' } as never);
        else {
          const source = await p.open();
          // Opened while the archive went away: nothing will read it.
          if (gone.signal.aborted) {
            source.destroy();
            return;
          }
          current = source;
          archive.append(source, { name: p.name, date: p.modified ?? undefined });
        }
        // One backend read at a time: the next starts when this entry is written.
        await once(archive, 'entry', { signal: gone.signal });
      }
      await archive.finalize();
    } catch (e) {
      if (!gone.signal.aborted) archive.destroy(e as Error);
    }
  })();
  return { name: zipName(names, folderName), stream: archive };
}

async function walk(connector: StorageConnector, path: string, prefix: string, plan: Planned[]): Promise<void> {
  for (const child of await connector.list(path)) {
    const name = `${prefix}/${child.name}`;
    if (child.kind === 'folder') {
      plan.push({ name: `${name}/`, kind: 'folder' });
      await walk(connector, joinPath(path, child.name), name, plan);
    } else {
      plan.push({ name, kind: 'file', modified: child.modified, open: () => connector.read(child.path) });
    }
    if (plan.length > ZIP_MAX_ENTRIES) throw new ServiceError('payload_too_large', `A zip download holds at most ${ZIP_MAX_ENTRIES} entries.`);
  }
}
