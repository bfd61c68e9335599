/**
 * The desktop app's upload of a folder the user dropped: its tree is read from the disk, the
 * folder is created in the destination under the free-name rule (services/names.ts: "name (1)"
 * when taken, both kept), then its sub-folders, then every file streamed from the disk — as one
 * transfer whose progress is the bytes of all files (cancel stops it; what was uploaded stays).
 * What cannot be uploaded (a name that is not valid UTF-8, a link, socket or device) is skipped
 * and named in the transfer's error, which then ends failed once the rest is in.
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Resource } from '../contract';
import { ServiceError } from '../errors';
import type { StorageService } from './storage';
import type { TransfersService } from './transfers';

interface LocalTree {
  /** Relative folder paths, parents first. */
  folders: string[];
  files: { folder: string; name: string; abs: string; size: number }[];
  /** Relative paths left out: names that are not valid UTF-8, and links, sockets and devices. */
  badNames: string[];
  specials: string[];
}

async function readLocalTree(root: string): Promise<LocalTree> {
  const tree: LocalTree = { folders: [], files: [], badNames: [], specials: [] };
  const walk = async (abs: string, rel: string): Promise<void> => {
    // Names as bytes: one that is not valid UTF-8 would come back as a string with U+FFFD,
    // naming no file on the disk.
    for (const d of await readdir(abs, { withFileTypes: true, encoding: 'buffer' })) {
      const name = d.name.toString('utf8');
      const childRel = rel ? `${rel}/${name}` : name;
      if (!Buffer.from(name).equals(d.name)) {
        tree.badNames.push(childRel);
        continue;
      }
      const childAbs = join(abs, name);
      if (d.isDirectory()) {
        tree.folders.push(childRel);
        await walk(childAbs, childRel);
      } else if (d.isFile()) {
        tree.files.push({ folder: rel, name, abs: childAbs, size: (await stat(childAbs)).size });
      } else {
        // Not uploaded, as the local connector does not list them.
        tree.specials.push(childRel);
      }
    }
  };
  await walk(root, '');
  return tree;
}

/** What the transfer ends with when the walk left something out; undefined when nothing was. */
function skipped(tree: LocalTree): Error | undefined {
  const n = tree.badNames.length + tree.specials.length;
  if (n === 0) return undefined;
  const names = (paths: string[]) => paths.slice(0, 3).join(', ') + (paths.length > 3 ? ` and ${paths.length - 3} more` : '');
  const why = [
    tree.badNames.length ? `names not valid UTF-8 (${names(tree.badNames)})` : '',
    tree.specials.length ? `links, pipes, sockets or devices (${names(tree.specials)})` : '',
  ].filter(Boolean);
  return new Error(`${n} ${n === 1 ? 'file was' : 'files were'} skipped: ${why.join('; ')}. Everything else was uploaded.`);
}

/** Uploads the folder at `dir` into `parent`; resolves with the folder created. */
export async function uploadLocalFolder(deps: { storage: StorageService; transfers: TransfersService }, account: number, parent: string, dir: string): Promise<Resource> {
  const { storage, transfers } = deps;
  const name = basename(dir);
  const tree = await readLocalTree(dir);
  const total = tree.files.reduce((n, f) => n + f.size, 0);
  const { transfer, signal } = transfers.start({ direction: 'upload', name, account, target: parent, bytesTotal: total });
  try {
    const loc = await storage.locate(account, parent);
    const claim = await storage.claimName(account, loc.connector, loc.path, name, 'rename');
    let top: Resource;
    try {
      top = await storage.mkdir(account, parent, claim.name, { conflictIfExists: true });
    } finally {
      claim.release(true);
    }
    const ids = new Map<string, string>([['', top.id]]);
    for (const rel of tree.folders) {
      signal.throwIfAborted();
      const slash = rel.lastIndexOf('/');
      const made = await storage.mkdir(account, ids.get(slash === -1 ? '' : rel.slice(0, slash))!, rel.slice(slash + 1), { conflictIfExists: true });
      ids.set(rel, made.id);
    }
    for (const f of tree.files) {
      signal.throwIfAborted();
      // Into a local folder the file system copies; elsewhere the file is streamed.
      if (await storage.uploadFile(account, ids.get(f.folder)!, f.name, f.abs, { conflict: 'rename', signal })) {
        transfers.progress(transfer.id, f.size);
        continue;
      }
      const source = createReadStream(f.abs, { signal });
      await transfers.sendMetered(transfer.id, source, (body) => storage.upload(account, ids.get(f.folder)!, f.name, body, { conflict: 'rename', size: f.size, signal }));
    }
    // A transfer that left files out ends failed, saying which: it did not upload all it was given.
    transfers.finish(transfer.id, skipped(tree), top.name);
    return top;
  } catch (e) {
    transfers.finish(transfer.id, e);
    throw signal.aborted ? new ServiceError('request_timeout', 'Cancelled by the user.') : e;
  }
}
