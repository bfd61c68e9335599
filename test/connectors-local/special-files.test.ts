/**
 * The `local` connector and the files of a folder that are neither regular files nor folders:
 * named pipes (FIFOs), unix sockets, symlink loops. Opening a FIFO for reading waits for a
 * writer; were the connector to do that, each attempt would hold one thread of the shared I/O
 * pool forever and four of them would stop every file operation of every account. Over REST
 * (spec 1, Download / Copy / Rename-move; errors as in spec 1, "Errors" and README "Errors").
 */
import { spawnSync } from 'node:child_process';
import { constants as fsc, mkdirSync, openSync, closeSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../../src-main/connectors/local';
import { importLocal, isErrorBody, startRest, type RestServer } from '../rest/harness';

let server: RestServer;
let account: { id: number; token: string; folder: string };
let socket: Server;
const FILES = 8;
const content = (i: number) => Buffer.alloc(64 * 1024, String.fromCharCode(97 + i));

/** One REST call that gives up after 10 s: a request stuck behind a blocked thread fails the test instead of hanging it. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; buffer: Buffer }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${account.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  const buffer = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  try {
    json = JSON.parse(buffer.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: res.status, json, buffer };
}

async function idOf(rawId: string): Promise<string> {
  const r = await call('POST', `/v1/accounts/${account.id}/storage/convert_id`, { raw_id: rawId, type: 'file' });
  expect(r.status).toBe(200);
  return r.json.id as string;
}

beforeAll(async () => {
  server = await startRest();
  account = await importLocal(server);
  for (let i = 0; i < FILES; i++) writeFileSync(join(account.folder, `file-${i}.bin`), content(i));
  const mk = spawnSync('mkfifo', [join(account.folder, 'pipe')]);
  if (mk.status !== 0) throw new Error(`mkfifo failed: ${mk.stderr}`);
  mkdirSync(join(account.folder, 'with-pipe'));
  writeFileSync(join(account.folder, 'with-pipe', 'plain.txt'), 'plain');
  spawnSync('mkfifo', [join(account.folder, 'with-pipe', 'inner-pipe')]);
  socket = createServer();
  await new Promise<void>((res) => socket.listen(join(account.folder, 'sock'), res));
  symlinkSync('loop-b', join(account.folder, 'loop-a'));
  symlinkSync('loop-a', join(account.folder, 'loop-b'));
});

afterAll(async () => {
  // Should a reader be stuck in open() (the bug), a writer appearing releases it.
  try {
    closeSync(openSync(join(account.folder, 'pipe'), fsc.O_WRONLY | fsc.O_NONBLOCK));
  } catch {
    /* no reader waiting */
  }
  await new Promise((res) => socket?.close(res));
  await server?.stop();
});

describe('local connector: FIFOs and sockets (spec 1, Download / Copy / Rename)', () => {
  it('leaves them out of listings', async () => {
    const r = await call('GET', `/v1/accounts/${account.id}/storage/folders/root/contents?page_size=100`);
    expect(r.status).toBe(200);
    const names = (r.json.objects ?? r.json.items ?? r.json.contents ?? []).map((o: { name: string }) => o.name);
    expect(names).toContain('file-0.bin');
    expect(names).not.toContain('pipe');
    expect(names).not.toContain('sock');
  });

  it('answers 403 forbidden in the documented shape to download, copy and move, and the I/O pool stays free', async () => {
    for (const name of ['pipe', 'sock']) {
      const id = await idOf(`/${name}`);
      // More attempts at once than the pool has threads (4): not one may wait for a writer.
      const downloads = await Promise.all(Array.from({ length: 6 }, () => call('GET', `/v1/accounts/${account.id}/storage/files/${id}/contents`)));
      for (const d of downloads) {
        expect(d.status).toBe(403);
        expect(isErrorBody(d.json, 403)).toBe(true);
        expect(d.json.error_code).toBe('forbidden');
      }
      const meta = await call('GET', `/v1/accounts/${account.id}/storage/files/${id}`);
      expect([meta.status, meta.json?.error_code]).toEqual([403, 'forbidden']);
      const copy = await call('POST', `/v1/accounts/${account.id}/storage/files/${id}/copy`, { parent_id: 'root', name: `${name}-copy` });
      expect(copy.status).toBe(403);
      expect(isErrorBody(copy.json, 403)).toBe(true);
      const move = await call('PATCH', `/v1/accounts/${account.id}/storage/files/${id}`, { name: `${name}-renamed` });
      expect(move.status).toBe(403);
      expect(isErrorBody(move.json, 403)).toBe(true);
    }

    const downloads = await Promise.all(
      Array.from({ length: FILES }, async (_, i) => {
        const d = await call('GET', `/v1/accounts/${account.id}/storage/files/${await idOf(`/file-${i}.bin`)}/contents`);
        return { status: d.status, same: d.buffer.equals(content(i)) };
      }),
    );
    expect(downloads).toEqual(Array.from({ length: FILES }, () => ({ status: 200, same: true })));
  });

  it('copies a folder holding a FIFO without it (the regular files arrive)', async () => {
    const r = await call('POST', `/v1/accounts/${account.id}/storage/convert_id`, { raw_id: '/with-pipe', type: 'folder' });
    const copy = await call('POST', `/v1/accounts/${account.id}/storage/folders/${r.json.id}/copy`, { parent_id: 'root', name: 'copied' });
    expect(copy.status).toBe(201);
    const c = new LocalConnector({ path: account.folder });
    expect((await c.list('/copied')).map((e) => e.name)).toEqual(['plain.txt']);
    expect(spawnSync('test', ['-e', join(account.folder, 'copied', 'inner-pipe')]).status).not.toBe(0);
  });
});

describe('local connector: errno codes map to documented errors (README "Errors")', () => {
  it('a symlink loop is 404 not_found over REST, and listings leave it out', async () => {
    const id = await idOf('/loop-a');
    for (const path of [`/v1/accounts/${account.id}/storage/files/${id}`, `/v1/accounts/${account.id}/storage/files/${id}/contents`]) {
      const r = await call('GET', path);
      expect(r.status).toBe(404);
      expect(isErrorBody(r.json, 404)).toBe(true);
      expect(r.json.error_code).toBe('not_found');
    }
    const list = await call('GET', `/v1/accounts/${account.id}/storage/folders/root/contents?page_size=100`);
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.json)).not.toContain('loop-a');
  });

  it('ELOOP, ENAMETOOLONG and ENOTDIR become not_found, invalid_parameters and invalid_parent_folder', async () => {
    const c = new LocalConnector({ path: account.folder });
    const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code?: string }) => e.code);
    expect(await code(c.stat('/loop-b'))).toBe('not_found');
    expect(await code(c.read('/loop-b'))).toBe('not_found');
    expect(await code(c.list('/loop-a'))).toBe('not_found');
    expect(await code(c.stat(`/${'n'.repeat(300)}`))).toBe('invalid_parameters');
    expect(await code(c.stat('/file-0.bin/below'))).toBe('invalid_parent_folder');
    expect(await code(c.features.copy!('/pipe', '/pipe-2'))).toBe('forbidden');
  });
});
