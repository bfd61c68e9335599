// The desktop-only procedures (contract: files.uploadPaths, files.uploadPath, files.download):
// run through the same handlers as Electron's IPC with the desktop platform, and refused in
// headless mode, where the caller is a browser holding the UI token.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { dispatch } from '../../src-main/rpc/dispatch';
import { createHandlers } from '../../src-main/rpc/handlers';
import { scratchDir } from '../servers/util';

let app: App;
let account: number;
const dir = scratchDir('desktop');
const desktop = () => createHandlers(app, { mode: 'electron', version: 'test', chooseSavePath: async (name) => join(dir, `saved-${name}`) });
const headless = () => createHandlers(app, { mode: 'headless', version: 'test' });

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('desktop-data'), defaultLocalFolder: false });
  account = (await app.accounts.connect({ service: 'memory', options: { store: `desktop-${Date.now()}` } })).id;
});
afterAll(() => app?.close());

describe('desktop procedures', () => {
  it('files.uploadPath uploads a local file to `ephemeral` and answers the file (compose attachments)', async () => {
    const local = join(dir, 'report.pdf');
    writeFileSync(local, Buffer.from('%PDF-1.7 pretend'));
    const r = await dispatch(desktop(), 'files.uploadPath', { account, parent: 'ephemeral', path: local });
    expect(r).toMatchObject({ ok: true, value: { name: 'report.pdf', size: 16, parent: { id: 'ephemeral' } } });
    const { stream } = await app.storage.download(account, (r as { value: { id: string } }).value.id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('%PDF-1.7 pretend');
    expect(app.transfers.list().find((t) => t.name === 'report.pdf')).toMatchObject({ state: 'done', bytesDone: 16 });
  });

  it('files.download saves through the save dialog, byte-identical', async () => {
    const up = await dispatch(desktop(), 'files.uploadPath', { account, parent: 'root', path: join(dir, 'report.pdf') });
    const saved = await dispatch(desktop(), 'files.download', { account, id: (up as { value: { id: string } }).value.id });
    expect(saved).toEqual({ ok: true, value: { path: join(dir, 'saved-report.pdf') } });
    const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(hash(readFileSync(join(dir, 'saved-report.pdf')))).toBe(hash(readFileSync(join(dir, 'report.pdf'))));
  });

  it('a missing local file is a clear invalid_parameters', async () => {
    const r = await dispatch(desktop(), 'files.uploadPath', { account, parent: 'root', path: join(dir, 'nope.bin') });
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_parameters', message: '"nope.bin" is not a readable file.' } });
  });

  it('headless refuses every procedure that touches local paths', async () => {
    for (const [procedure, input] of [
      ['files.uploadPath', { account, parent: 'root', path: join(dir, 'report.pdf') }],
      ['files.uploadPaths', { account, parent: 'root', paths: [join(dir, 'report.pdf')] }],
    ] as const) {
      expect(await dispatch(headless(), procedure, input)).toMatchObject({ ok: false, error: { code: 'not_implemented' } });
    }
  });
});
