/**
 * The Electron IPC edge (src-main/ipc/rpc.ts) without an Electron binary: the real handlers over
 * a real app (memory backend), called through the function that `ipcMain.handle('rpc', …)`
 * receives, with hand-built sender frames. Proves the sender check, contract parsing of input,
 * RpcResult answers, and that events reach only windows showing our page.
 * The IPC handler checks the sender, and the contract is the same over IPC as over WebSocket.
 */
import { rmSync } from 'node:fs';
import type { BrowserWindow, IpcMain } from 'electron';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { RpcResult } from '../../src-main/contract';
import { EVENT_CHANNEL, forwardEvents, registerRpc, RPC_CHANNEL } from '../../src-main/ipc/rpc';
import { createHandlers } from '../../src-main/rpc/handlers';
import { scratchDir } from '../servers/util';

type Invoke = (event: unknown, procedure: unknown, input: unknown) => Promise<RpcResult<unknown>>;

const OUR_URL = 'app://tributary/index.html';
const trusted = (url: string) => url.startsWith('app://tributary/');
const frame = (url: string, parent: unknown = null) => ({ senderFrame: { url, parent } });

describe('Electron IPC: rpc channel and event forwarding (src-main/contract over IPC)', () => {
  let dir: string;
  let app: App;
  let invoke: Invoke;
  let account: number;

  beforeAll(async () => {
    dir = scratchDir('ipc-rpc');
    app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    account = (await app.accounts.connect({ service: 'memory', options: { store: `ipc-${Date.now()}` } })).id;
    const registered = new Map<string, Invoke>();
    const ipcMain = { handle: (channel: string, fn: Invoke) => registered.set(channel, fn), removeHandler: (channel: string) => registered.delete(channel) };
    registerRpc(ipcMain as unknown as IpcMain, createHandlers(app, { mode: 'electron', version: 'test' }), trusted);
    invoke = registered.get(RPC_CHANNEL)!;
  });

  afterAll(async () => {
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers our own top frame with an RpcResult', async () => {
    const r = await invoke(frame(OUR_URL), 'accounts.list', {});
    expect(r.ok).toBe(true);
    if (r.ok) expect((r.value as { id: number }[]).map((a) => a.id)).toContain(account);
  });

  it('refuses a subframe, a foreign page, and a missing frame', async () => {
    for (const event of [frame(OUR_URL, { url: OUR_URL }), frame('https://evil.example/'), frame('file:///tmp/x.html'), { senderFrame: null }]) {
      const r = await invoke(event, 'accounts.list', {});
      expect(r).toMatchObject({ ok: false, error: { code: 'forbidden', status: 403 } });
    }
  });

  it('rejects unknown procedures, including prototype names', async () => {
    for (const name of ['nope.nothing', '__proto__', 'constructor', 42]) {
      const r = await invoke(frame(OUR_URL), name, {});
      expect(r).toMatchObject({ ok: false, error: { code: 'not_found' } });
    }
  });

  it('parses input with the contract before any handler runs', async () => {
    const r = await invoke(frame(OUR_URL), 'files.list', { account: 'one', folder: 'root' });
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_parameters', status: 400 } });
    const tampered = await invoke(frame(OUR_URL), 'files.get', { account, id: 'A'.repeat(60) });
    expect(tampered).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });

  it('carries service errors with their spec code and message (spec 1, Errors)', async () => {
    const r = await invoke(frame(OUR_URL), 'files.mkdir', { account, parent: 'root', name: 'a/b' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.status).toBe(400);
      expect(r.error.message).toMatch(/\//);
    }
  });

  it('forwards events to windows showing our page only', async () => {
    const sent: { win: string; channel: string; name: string }[] = [];
    const win = (id: string, url: string) =>
      ({ webContents: { isDestroyed: () => false, getURL: () => url, send: (channel: string, name: string) => sent.push({ win: id, channel, name }) } }) as unknown as BrowserWindow;
    const off = forwardEvents(app.events, () => [win('ours', OUR_URL), win('foreign', 'https://evil.example/')], trusted);
    const created = await invoke(frame(OUR_URL), 'files.mkdir', { account, parent: 'root', name: 'Reports' });
    off();
    expect(created).toMatchObject({ ok: true, value: { name: 'Reports', kind: 'folder' } });
    expect(sent).toContainEqual({ win: 'ours', channel: EVENT_CHANNEL, name: 'files.changed' });
    expect(sent.filter((s) => s.win === 'foreign')).toEqual([]);
  });
});
