/**
 * A live Tributary REST server for the tests: a fresh app in a scratch data dir, the app's
 * createHttpServer (Host guard, limits) with registerRest, one API key, and a tiny client.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { createApp, type App, type AppOptions } from '../../src-main/app';
import { registerRest, restServices } from '../../src-main/rest';
import { createHttpServer } from '../../src-main/server/http';
import { scratchDir } from '../servers/util';

export interface RestServer {
  app: App;
  url: string;
  port: number;
  apiKey: string;
  dir: string;
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  stop(): Promise<void>;
}

export interface CallOptions {
  auth?: string | null;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: Buffer | string;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  buffer: Buffer;
  json: any;
}

export async function startRest(options: Pick<AppOptions, 'activity' | 'accountHealth'> & { dataDir?: string } = {}): Promise<RestServer> {
  const dir = scratchDir('rest');
  const app = await createApp({ dataDir: options.dataDir ?? join(dir, 'data'), defaultLocalFolder: false, activity: options.activity, accountHealth: options.accountHealth });
  const apiKey = 'test-api-key-0123456789';
  restServices(app).apiKeys.ensure(apiKey);
  const http = await createHttpServer(app, { host: '127.0.0.1', port: 0, uiToken: 'ui-token-for-tests-0123456789', plugins: [registerRest] });
  const call = async (method: string, path: string, options: CallOptions = {}): Promise<CallResult> => {
    const headers: Record<string, string> = { ...options.headers };
    const auth = options.auth === undefined ? `APIKey ${apiKey}` : options.auth;
    if (auth !== null) headers.authorization = auth;
    let body: Buffer | string | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await request(`${http.url}${path}`, { method: method as 'GET', headers, body, headersTimeout: 30_000, bodyTimeout: 30_000 });
    const buffer = Buffer.from(await res.body.arrayBuffer());
    const text = buffer.toString('utf8');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, text, buffer, json };
  };
  return {
    app,
    url: http.url,
    port: http.port,
    apiKey,
    dir,
    call,
    async stop() {
      await http.close();
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A `local` account over a fresh folder, with its own trash folder (never the desktop trash). */
export async function importLocal(server: RestServer, name = 'local'): Promise<{ id: number; token: string; folder: string }> {
  const folder = join(server.dir, name);
  const trash = join(server.dir, `${name}-trash`);
  mkdirSync(folder, { recursive: true });
  mkdirSync(trash, { recursive: true });
  const res = await server.call('POST', '/v2/accounts', { body: { service: 'local', account: name, token: '', path: folder, trash_dir: trash } });
  if (res.status !== 201) throw new Error(`import local failed: ${res.status} ${res.text}`);
  return { id: res.json.id, token: res.json.bearer_token.key, folder };
}

export async function importMemory(server: RestServer, store: string): Promise<{ id: number; token: string }> {
  const res = await server.call('POST', '/v2/accounts', { body: { service: 'memory', account: store, token: 'x' } });
  if (res.status !== 201) throw new Error(`import memory failed: ${res.status} ${res.text}`);
  return { id: res.json.id, token: res.json.bearer_token.key };
}

/** The documented error body (README "Errors"). */
export function isErrorBody(json: any, status: number): boolean {
  return (
    json !== null &&
    typeof json === 'object' &&
    json.status_code === status &&
    typeof json.error_code === 'string' &&
    typeof json.message === 'string' &&
    typeof json.id === 'string'
  );
}
