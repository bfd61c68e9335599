// The web UI's WebSocket client (src-renderer/src/api/transport.ts) against the real local
// server: a call over the server's message limit is refused in the page with a clear error
// (the connection stays up), and a rotated UI token ends the connection for good with a message.
import WS from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { WS_MAX_MESSAGE_BYTES } from '../../src-main/contract';
import { localAccess } from '../../src-main/server/access';
import type { HttpServer } from '../../src-main/server/http';
import { startLocalServer } from '../../src-main/server/local';
import { scratchDir } from '../servers/util';

// The renderer's own module, loaded at run time (the renderer is type-checked in its own project).
const TRANSPORT = '../../src-renderer/src/api/transport.ts';
interface Transport {
  call(procedure: string, input: unknown): Promise<unknown>;
  onReconnect(listener: () => void): () => void;
  close(): void;
}
let WsTransport: new (url: string) => Transport;
let app: App;
let http: HttpServer;

beforeAll(async () => {
  // The browser's WebSocket, as the page has it.
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WS;
  ({ WsTransport } = (await import(/* @vite-ignore */ TRANSPORT)) as { WsTransport: typeof WsTransport });
  app = await createApp({ dataDir: scratchDir('ws-client'), defaultLocalFolder: false });
  http = await startLocalServer(app, { host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await http?.close();
  await app?.close();
});

const transport = () => new WsTransport(`ws://127.0.0.1:${http.port}/ws?token=${new URL(http.uiUrl).searchParams.get('token')}`);

describe('web client over the WebSocket', () => {
  it('refuses a call over 1 MiB before sending it, with payload_too_large, and the connection stays up', async () => {
    const t = transport();
    let reconnects = 0;
    t.onReconnect(() => reconnects++);
    expect(await t.call('accounts.list', {})).toMatchObject({ ok: true });
    const big = await t.call('accounts.list', { pad: 'é'.repeat(WS_MAX_MESSAGE_BYTES / 2) });
    expect(big).toMatchObject({ ok: false, error: { code: 'payload_too_large', status: 413, message: expect.stringContaining('too large') } });
    expect(await t.call('accounts.list', {})).toMatchObject({ ok: true });
    expect(reconnects).toBe(0);
    t.close();
  });

  it('after the UI token is rotated the page is told to use the new link, and does not reconnect with the dead token', async () => {
    const t = transport();
    expect(await t.call('accounts.list', {})).toMatchObject({ ok: true });
    const pending = new Promise<void>((resolve) => t.onReconnect(() => resolve()));
    let reconnected = false;
    void pending.then(() => (reconnected = true));
    localAccess(app).rotate();
    // The server closes the socket with 4001; the next call opens nothing and says why.
    const after = await t.call('accounts.list', {});
    expect(after).toMatchObject({ ok: false, error: { code: 'service_not_available', message: expect.stringContaining('new link') } });
    expect(await t.call('accounts.list', {})).toMatchObject({ ok: false });
    expect(reconnected).toBe(false);
  });
});
