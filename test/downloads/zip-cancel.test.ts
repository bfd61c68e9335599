// A zip of a selection whose reader goes away (a cancelled download: the HTTP layer destroys
// the archive) releases the entry it was reading: no file left open on a local account, no
// smbclient left running on an SMB one (spec 1, Download a file; web UI).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { zipOf } from '../../src-main/downloads/zip';
import type { StorageService } from '../../src-main/services/storage';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { openOn, scratchDir } from '../servers/util';

const MiB = 1024 * 1024;

/**
 * The app's storage, keeping every entry source it opens: held here, a source left open stays
 * open (never closed by its collection), and `gate` holds each open back until it resolves.
 */
function recording(app: App, gate: Promise<void> = Promise.resolve()) {
  const sources: Readable[] = [];
  const storage = {
    get: app.storage.get.bind(app.storage),
    locate: app.storage.locate.bind(app.storage),
    download: async (account: number, id: string) => {
      await gate;
      const r = await app.storage.download(account, id);
      sources.push(r.stream);
      return r;
    },
  } as unknown as StorageService;
  return { storage, sources };
}

/** Reads the archive until `bytes` came out, then drops it as a reader that went away would. */
async function readThenDrop(stream: Readable, bytes: number, atDrop: () => void = () => {}): Promise<void> {
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('data', (c: Buffer) => {
      got += c.length;
      if (got < bytes || stream.destroyed) return;
      atDrop();
      stream.destroy();
      resolve();
    });
  });
}

describe('a cancelled zip download on a local account (spec 1, Download a file; web UI)', () => {
  let app: App;
  let account: number;
  let big: string;
  let ids: string[];

  beforeAll(async () => {
    const home = scratchDir('zip-cancel-home');
    mkdirSync(home, { recursive: true });
    big = join(home, 'big.bin');
    writeFileSync(big, randomBytes(32 * MiB));
    writeFileSync(join(home, 'next.bin'), randomBytes(MiB));
    app = await createApp({ dataDir: scratchDir('zip-cancel-data'), defaultLocalFolder: home });
    account = app.accounts.list()[0].id;
    const items = (await app.storage.list(account, 'root')).items;
    ids = ['big.bin', 'next.bin'].map((n) => items.find((i) => i.name === n)!.id);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('closes the file being read when the reader goes away mid-entry', async () => {
    const { storage, sources } = recording(app);
    const { stream } = await zipOf(storage, account, ids);
    await readThenDrop(stream, MiB, () => expect(openOn(big)).not.toEqual([]));
    await expect.poll(() => sources.map((s) => s.destroyed), { timeout: 10_000 }).toEqual([true]);
    await expect.poll(() => openOn(big), { timeout: 10_000 }).toEqual([]);
  });

  it('closes a file that finishes opening after the reader went away', async () => {
    // The backend answers the open only once the archive is gone.
    let answer!: () => void;
    const { storage, sources } = recording(app, new Promise<void>((r) => (answer = r)));
    const { stream } = await zipOf(storage, account, ids);
    stream.resume();
    stream.destroy();
    answer();
    await expect.poll(() => sources.map((s) => s.destroyed), { timeout: 10_000 }).toEqual([true]);
    await expect.poll(() => openOn(big), { timeout: 10_000 }).toEqual([]);
  });
});

describe('a cancelled zip download on an SMB account, against Samba (spec 1, Download a file; web UI)', () => {
  let server: Samba;
  let app: App;
  let account: number;
  let ids: string[];
  const share = 'zipcancel';

  /** The `get` smbclients (-E) of this process on this test's share. */
  const transfers = () =>
    readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')
      .split(' ')
      .map(Number)
      .filter((pid) => {
        try {
          const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
          return args.includes('-E') && args.some((a) => a.endsWith(`/${share}`));
        } catch {
          return false; // ended meanwhile
        }
      });

  beforeAll(async () => {
    server = await startSamba({ share });
    writeFileSync(join(server.shareDir, 'big.bin'), randomBytes(32 * MiB));
    writeFileSync(join(server.shareDir, 'next.bin'), randomBytes(MiB));
    app = await createApp({ dataDir: scratchDir('zip-cancel-smb-data'), defaultLocalFolder: false });
    account = (await app.accounts.connect({ service: 'smb', options: smbOptionsFor(server) })).id;
    const items = (await app.storage.list(account, 'root')).items;
    ids = ['big.bin', 'next.bin'].map((n) => items.find((i) => i.name === n)!.id);
  });
  afterAll(async () => {
    await app?.close();
    await server?.stop();
  });

  it("ends the entry's smbclient when the reader goes away mid-entry", async () => {
    const { stream } = await zipOf(app.storage, account, ids);
    await readThenDrop(stream, MiB, () => expect(transfers()).not.toEqual([]));
    await expect.poll(transfers, { timeout: 10_000 }).toEqual([]);
  });
});
