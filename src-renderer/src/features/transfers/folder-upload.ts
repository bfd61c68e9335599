/**
 * A folder dropped from the desktop, uploaded recursively as one transfer group: its tree is
 * read from the drop's directory entries (webkitGetAsEntry), the folder is created in the
 * destination (as "name (1)" and so on when the name is taken: both are kept), then its
 * sub-folders, then every file as a web upload whose progress counts into the group's one row
 * in Transfers (total bytes, speed, time left; Cancel stops them all).
 */
import type { TransferAction } from '../../../../src-main/contract';
import { SpeedWindow, transferActions } from '../../../../src-main/contract/transfers';
import { ApiError, type Api } from '../../api/client';
import { named } from '../../components/Name';
import { toastError, useUi, type LocalUpload } from '../../stores/ui';
import { cancelWebUpload, registerGroup, startWebUpload, type UploadSink } from './web-upload';

/** Files of one group uploading at once. */
const CONCURRENCY = 3;
/** "name (1)" … "name (99)" are tried when the folder's name is taken. */
const MAX_SUFFIX = 99;

interface Tree {
  /** Folder paths relative to the dropped folder, parents before children. */
  folders: string[];
  files: { folder: string; file: File }[];
}

function readAll(reader: FileSystemDirectoryReader): Promise<FileSystemEntry[]> {
  // readEntries answers in batches (100 in Chromium) until it answers none.
  return new Promise((resolve, reject) => {
    const all: FileSystemEntry[] = [];
    const next = () =>
      reader.readEntries((batch) => {
        if (batch.length === 0) return resolve(all);
        all.push(...batch);
        next();
      }, reject);
    next();
  });
}

export async function readTree(root: FileSystemDirectoryEntry): Promise<Tree> {
  const tree: Tree = { folders: [], files: [] };
  const walk = async (dir: FileSystemDirectoryEntry, rel: string): Promise<void> => {
    for (const entry of await readAll(dir.createReader())) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        tree.folders.push(path);
        await walk(entry as FileSystemDirectoryEntry, path);
      } else if (entry.isFile) {
        const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
        tree.files.push({ folder: rel, file });
      }
    }
  };
  await walk(root, '');
  return tree;
}

/** Creates `name` in `parent`, or the first free "name (n)"; answers its id and name. */
async function mkdirKeepingBoth(api: Api, account: number, parent: string, name: string): Promise<{ id: string; name: string }> {
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? name : `${name} (${n})`;
    try {
      const r = await api.call('files.mkdir', { account, parent, name: candidate });
      return { id: r.id, name: r.name };
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'naming_conflict') || n >= MAX_SUFFIX) throw e;
    }
  }
}

/** Uploads a dropped folder into `target` as one group; resolves when it has ended. */
export async function uploadFolder(api: Api, root: FileSystemDirectoryEntry, target: { account: number; folder: string }): Promise<void> {
  const ui = useUi.getState();
  const id = `group-${crypto.randomUUID()}`;
  const members = new Map<string, { done: number; state: LocalUpload['state']; error: string | null }>();
  const speed = new SpeedWindow();
  let state: LocalUpload['state'] = 'running';
  let total = 0;
  let queue: { folder: string; file: File }[] = [];
  const actions = (): TransferAction[] => transferActions(state, { pausable: false, continuable: false });
  const row = (p: Partial<LocalUpload>) => ui.patchUpload(id, { ...p, actions: actions() });
  ui.putUpload({
    id, name: root.name, account: target.account, target: target.folder, bytesDone: 0, bytesTotal: 0,
    state, error: null, startedAt: Date.now(), finishedAt: null, speed: 0, actions: actions(), savedAs: null,
  });
  const cancel = () => {
    if (state !== 'running') return;
    state = 'cancelled';
    queue = [];
    row({ state, speed: 0, finishedAt: Date.now() });
    for (const [member, m] of members) if (m.state === 'running') void cancelWebUpload(member);
  };
  registerGroup(id, (action) => action === 'cancel' && cancel());
  const refresh = () => {
    if (state !== 'running') return;
    let done = 0;
    for (const m of members.values()) done += m.done;
    const now = Date.now();
    speed.add(now, done);
    row({ bytesDone: Math.min(done, total), speed: speed.bytesPerSecond(now, done) });
  };
  // Each member's row is folded into the group's.
  const sink: UploadSink = {
    put: (u) => {
      members.set(u.id, { done: 0, state: u.state, error: null });
      refresh();
    },
    patch: (member, p) => {
      const m = members.get(member);
      if (!m) return;
      if (p.bytesDone !== undefined) m.done = p.bytesDone;
      if (p.state) m.state = p.state;
      if (p.error !== undefined) m.error = p.error;
      refresh();
    },
  };
  try {
    const tree = await readTree(root);
    total = tree.files.reduce((sum, f) => sum + f.file.size, 0);
    row({ bytesTotal: total });
    const top = await mkdirKeepingBoth(api, target.account, target.folder, root.name);
    if (top.name !== root.name) row({ savedAs: top.name });
    const ids = new Map<string, string>([['', top.id]]);
    for (const path of tree.folders) {
      if (state !== 'running') return;
      const slash = path.lastIndexOf('/');
      const made = await api.call('files.mkdir', { account: target.account, parent: ids.get(slash === -1 ? '' : path.slice(0, slash))!, name: path.slice(slash + 1) });
      ids.set(path, made.id);
    }
    queue = tree.files;
    const worker = async () => {
      for (let f = queue.shift(); f && state === 'running'; f = queue.shift()) {
        await startWebUpload(api, f.file, { account: target.account, folder: ids.get(f.folder)! }, 'rename', sink);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    if (state !== 'running') return;
    const failed = [...members.values()].filter((m) => m.state === 'failed');
    state = failed.length ? 'failed' : 'done';
    const error = failed.length ? `${failed.length} of ${members.size} files could not be uploaded: ${failed[0].error}` : null;
    row({ state, error, ...(failed.length ? {} : { bytesDone: total }), speed: 0, finishedAt: Date.now() });
    if (failed.length) toastError(named`Could not upload all of "${root.name}"`, error);
  } catch (e) {
    if (state !== 'running') return;
    state = 'failed';
    row({ state, error: (e as Error).message, speed: 0, finishedAt: Date.now() });
    toastError(named`Could not upload "${root.name}"`, e);
  }
}
