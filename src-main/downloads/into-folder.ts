/**
 * The desktop app's download of a selection (several files, folders) into a local folder the
 * user chose: each file becomes a resumable download job (downloader.ts) under a free name of
 * that folder, folders are recreated and walked recursively. The jobs run one after another in
 * the background and show in Transfers.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { joinPath, nameWithSuffix } from '../connectors/shared/paths';
import type { StorageService } from '../services/storage';
import type { Downloader } from './downloader';

/**
 * A name from a backend or a message (an attachment's filename is the sender's text) as a file
 * name on this computer: its last path segment ("../../x.desktop" is "x.desktop", never a path
 * out of the chosen folder), without control characters (NUL, line breaks), within 255 bytes;
 * "download" when nothing is left.
 */
export function localName(name: string): string {
  const last = name.split(/[/\\]/).filter((s) => s !== '').pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = last.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean === '' || clean === '.' || clean === '..' ? 'download' : nameWithSuffix(clean, '');
}

/** `name` (as localName makes it) in `dir`, or "name (2).ext", "name (3).ext"… when taken (what is there is never replaced). */
export function freeLocalPath(dir: string, rawName: string): string {
  const name = localName(rawName);
  const ext = extname(name);
  const stem = ext && ext !== name ? name.slice(0, -ext.length) : name;
  let candidate = join(dir, name);
  for (let n = 2; existsSync(candidate); n++) candidate = join(dir, `${stem} (${n})${ext}`);
  return candidate;
}

/**
 * Plans the downloads of `ids` into `dir` and starts running them; resolves with the planned
 * jobs' count once every folder exists and every job is planned, and `done` settles when the
 * last job ended.
 */
export async function downloadInto(deps: { storage: StorageService; downloads: Downloader }, account: number, ids: string[], dir: string): Promise<{ started: number; done: Promise<void> }> {
  const jobs: number[] = [];
  const plan = async (fileId: string, targetDir: string, name: string) => {
    jobs.push(await deps.downloads.plan({ accountId: account, fileId, targetPath: freeLocalPath(targetDir, name) }));
  };
  const connector = (await deps.storage.locate(account, 'root')).connector;
  const walk = async (path: string, localDir: string): Promise<void> => {
    for (const child of await connector.list(path)) {
      if (child.kind === 'folder') {
        const sub = freeLocalPath(localDir, child.name);
        await mkdir(sub);
        await walk(joinPath(path, child.name), sub);
      } else {
        await plan(deps.storage.idOf(account, child.path), localDir, child.name);
      }
    }
  };
  for (const id of ids) {
    const r = await deps.storage.get(account, id);
    if (r.kind === 'file') {
      await plan(id, dir, r.name);
    } else {
      const local = freeLocalPath(dir, r.name || 'Root');
      await mkdir(local);
      await walk((await deps.storage.locate(account, id)).path, local);
    }
  }
  // One at a time, like a browser's downloads of one zip; a failed job stays in Transfers to retry.
  const done = (async () => {
    for (const job of jobs) await deps.downloads.resume(job).catch(() => {});
  })();
  return { started: jobs.length, done };
}
