// The uploader to a backend that takes no parts (spec 1, Upload a file; WebDAV on Apache): a
// multipart session there would only spool the file's parts to this computer's disk and upload
// them whole on complete, so the file is streamed once instead, byte-identical, with no session.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { MultipartService, type InitInput } from '../../src-main/uploads/multipart';
import { Uploader } from '../../src-main/uploads/uploader';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';
import { scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

/** The multipart service, counting the sessions opened. */
class Counting extends MultipartService {
  sessions = 0;
  override init(accountId: number, input: InitInput) {
    this.sessions++;
    return super.init(accountId, input);
  }
}

let apache: ApacheServer;
let app: App;
let work: string;

beforeAll(async () => {
  apache = await startApache();
  work = scratchDir('streamed-upload');
  app = await createApp({ dataDir: join(work, 'data'), defaultLocalFolder: false });
});

afterAll(async () => {
  await app?.close();
  await apache?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('uploader to WebDAV (spec 1, Upload a file)', () => {
  it('streams a 20 MiB file once: no multipart session, nothing spooled, byte-identical', async () => {
    const account = (await app.accounts.connect({ service: 'webdav', options: webdavOptions(apache) })).id;
    const file = join(work, 'twenty.bin');
    const data = randomBytes(20 * MiB + 3);
    writeFileSync(file, data);
    const multipart = new Counting(app);
    const resource = await new Uploader(app, multipart).upload({ accountId: account, parentId: 'root', localPath: file });
    expect(resource).toMatchObject({ name: 'twenty.bin', size: data.length });
    expect(createHash('sha256').update(readFileSync(join(apache.root, 'twenty.bin'))).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    expect(multipart.sessions).toBe(0);
    expect(readdirSync(join(work, 'data')).includes('multipart') ? readdirSync(join(work, 'data', 'multipart')) : []).toEqual([]);
    expect(app.transfers.list().at(-1)).toMatchObject({ name: 'twenty.bin', state: 'done', bytesDone: data.length });
  });
});
