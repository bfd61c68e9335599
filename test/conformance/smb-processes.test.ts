// spec 1, "Download a file": an SMB download of a whole file runs one smbclient process (no
// `ls` before the `get`), and still refuses what it cannot read before the first byte.
// spec 1, Folders (list contents), "Get metadata", "Create a folder", "Update metadata" (rename),
// "Delete": listings, stats and changes run on long-lived smbclient sessions, no process start and
// no authentication per operation; a session that dies or hangs is replaced, and the request
// under it fails or is asked again, never hangs or returns a partial answer.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { SmbConnector } from '../../src-main/connectors/smb';
import type { Entry } from '../../src-main/connectors/types';
import { Smbclient } from '../../src-main/connectors/smb/smbclient';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { scratchDir } from '../servers/util';
import { textOf } from './storage-suite';

describe('smb without a process per question', () => {
  let server: Samba;
  let c: SmbConnector;
  let app: App;
  let log: string;
  let wrapper: string;
  let dir: string;
  const runs = () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length;

  beforeAll(async () => {
    server = await startSamba();
    // smbclient behind a wrapper that counts its runs.
    dir = scratchDir('smb-processes');
    log = join(dir, 'runs.log');
    writeFileSync(log, '');
    wrapper = join(dir, 'smbclient');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> '${log}'\nexec smbclient "$@"\n`);
    chmodSync(wrapper, 0o755);
    c = new SmbConnector(smbOptionsFor(server, { smbclient: wrapper }));
    writeFileSync(join(server.shareDir, 'whole.txt'), 'all of it');
    writeFileSync(join(server.shareDir, 'empty.txt'), '');
    mkdirSync(join(server.shareDir, 'folder'));
    mkdirSync(join(server.shareDir, 'Listed', 'Inner'), { recursive: true });
    writeFileSync(join(server.shareDir, 'Listed', 'one.txt'), '1');
    app = await createApp({ dataDir: join(dir, 'data'), defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    await c?.close();
    await server?.stop();
  });

  it('reads a whole file with one smbclient run', async () => {
    const before = runs();
    expect(await textOf(await c.read('/whole.txt'))).toBe('all of it');
    expect(runs() - before).toBe(1);
    expect(await textOf(await c.read('/empty.txt'))).toBe('');
  });

  it('a ranged read still gets the right bytes', async () => {
    expect(await textOf(await c.read('/whole.txt', { start: 4, end: 5 }))).toBe('of');
  });

  it('a missing file or a folder fails the read itself, not a stream later', async () => {
    await expect(c.read('/missing.txt')).rejects.toMatchObject({ code: 'not_found' });
    await expect(c.read('/folder')).rejects.toMatchObject({ code: 'invalid_parameters' });
  });

  it('a stat and a listing of one folder asked together share one answer', async () => {
    const [self, children] = await Promise.all([c.stat('/listed'), c.list('/listed')]);
    expect(self).toMatchObject({ path: '/listed', name: 'Listed', kind: 'folder' });
    expect(children.map((e) => [e.name, e.kind, e.size])).toEqual([
      ['Inner', 'folder', null],
      ['one.txt', 'file', 1],
    ]);
  });

  it('asked together, a folder named like the end of a listing still lists its children', async () => {
    // smbclient ends each `ls` with "N blocks of size B. F blocks available".
    const odd = '7 blocks of size 2. 3 blocks available';
    mkdirSync(join(server.shareDir, odd));
    writeFileSync(join(server.shareDir, odd, 'inside.txt'), 'in');
    const [self, children] = await Promise.all([c.stat(`/${odd}`), c.list(`/${odd}`)]);
    expect(self).toMatchObject({ name: odd, kind: 'folder' });
    expect(children.map((e) => e.name)).toEqual(['inside.txt']);
  });

  it('asked together, a file and a missing path fail the listing as when asked apart', async () => {
    const [file, listFile] = await Promise.allSettled([c.stat('/whole.txt'), c.list('/whole.txt')]);
    expect(file).toMatchObject({ status: 'fulfilled', value: { kind: 'file', size: 9 } });
    expect(listFile).toMatchObject({ status: 'rejected', reason: { code: 'invalid_parent_folder' } });
    const missing = await Promise.allSettled([c.stat('/missing'), c.list('/missing')]);
    expect(missing.map((r) => r.status === 'rejected' && r.reason.code)).toEqual(['not_found', 'not_found']);
    const empty = await Promise.all([c.stat('/folder'), c.list('/folder')]);
    expect(empty[0].kind).toBe('folder');
    expect(empty[1]).toEqual([]);
  });

  it('listings, stats, mkdir, rename and delete start no process once a session is up', async () => {
    await c.stat('/listed');
    const before = runs();
    await c.mkdir('/made');
    expect((await c.stat('/made')).kind).toBe('folder');
    await c.features.move!('/made', '/moved');
    expect((await c.list('/')).map((e) => e.name)).toContain('moved');
    await c.remove('/moved', { recursive: false });
    await expect(c.stat('/moved')).rejects.toMatchObject({ code: 'not_found' });
    expect(await c.features.quota!()).toMatchObject({ total: expect.any(Number) });
    expect(runs() - before).toBe(0);
  });

  it('a line break in a name is refused before anything reaches a session (no second command)', async () => {
    const marker = join(dir, 'ran');
    await expect(c.mkdir(`/x\n!touch ${marker}`)).rejects.toMatchObject({ code: 'invalid_parameters' });
    await expect(c.stat(`/x\r\n!touch ${marker}`)).rejects.toMatchObject({ code: 'invalid_parameters' });
    expect(existsSync(marker)).toBe(false);
  });

  // spec 1, "Upload a file": a body larger than the spooled size streams into smbclient.
  it('a streamed upload passes its body\'s chunks on without copying them, Uint8Array chunks included', async () => {
    const parts = [randomBytes(3 << 20), new Uint8Array(randomBytes(1 << 20)), randomBytes(2 << 20).subarray(7)];
    const fromBuffer = vi.spyOn(Buffer, 'from');
    let copies = 0;
    try {
      const made = await c.write('/streamed.bin', Readable.from(parts));
      // Buffer.from(chunk) copies it; a view of a Uint8Array's memory is Buffer.from(its buffer, …).
      copies = fromBuffer.mock.calls.filter(([arg]) => (parts as unknown[]).includes(arg)).length;
      expect(made.size).toBe(parts.reduce((n, p) => n + p.length, 0));
    } finally {
      fromBuffer.mockRestore();
    }
    expect(copies).toBe(0);
    expect(readFileSync(join(server.shareDir, 'streamed.bin')).equals(Buffer.concat(parts))).toBe(true);
  });

  it('a folder page from the storage service starts no process once the account is connected', async () => {
    const acc = await app.accounts.connect({ service: 'smb', options: { ...smbOptionsFor(server), smbclient: wrapper } });
    const listed = (await app.storage.list(acc.id, 'root')).items.find((i) => i.name === 'Listed')!;
    const before = runs();
    const page = await app.storage.list(acc.id, listed.id);
    expect(runs() - before).toBe(0);
    expect(page.folder).toMatchObject({ name: 'Listed' });
    expect(page.items.map((i) => i.name)).toEqual(['Inner', 'one.txt']);
  });
});

/** Samba with a writable share folder `many` of `count` small files, plus files named `extra`. */
async function sambaWithMany(count: number, extra: string[] = []): Promise<Samba> {
  const server = await startSamba();
  const dir = join(server.shareDir, 'many');
  mkdirSync(dir);
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `entry-${i}.txt`), 'x');
  for (const name of extra) writeFileSync(join(dir, name), 'y');
  chmodSync(dir, 0o777);
  return server;
}

describe('smb sessions that die or hang', () => {
  let server: Samba;
  const many = 3000;

  beforeAll(async () => {
    server = await sambaWithMany(many);
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** The session's smbclient stopped (SIGSTOP): a request sent to it waits in its stdin. */
  const stopSession = async (c: SmbConnector) => {
    await c.stat('/many');
    const [pid] = c.sessionPids();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, 'SIGSTOP');
    return pid!;
  };

  it('a session killed under a listing is replaced and the listing asked again, whole', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      const pid = await stopSession(c);
      const listing = c.list('/many');
      // Let the request reach the stopped session's stdin, then kill it mid-request.
      await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGKILL');
      expect((await listing).length).toBe(many);
      expect(c.sessionPids()).not.toContain(pid);
    } finally {
      await c.close();
    }
  });

  it('a session killed under a change fails that change with service_not_available, and the next works', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      const pid = await stopSession(c);
      const made = c.mkdir('/under-kill');
      await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGKILL');
      await expect(made).rejects.toMatchObject({ code: 'service_not_available' });
      expect((await c.mkdir('/after-kill')).kind).toBe('folder');
    } finally {
      await c.close();
    }
  });

  it('a session that stops answering a read is ended and the read fails; the next read works', async () => {
    const c = new SmbConnector(smbOptionsFor(server), { readQuietMs: 1500 });
    try {
      const pid = await stopSession(c);
      await expect(c.list('/many')).rejects.toMatchObject({ code: 'service_not_available' });
      expect(c.sessionPids()).not.toContain(pid);
      expect((await c.list('/many')).length).toBe(many);
    } finally {
      await c.close();
    }
  });

  it('a read after the server restarted under an idle session gets its answer', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      await c.stat('/many');
      await server.restart();
      expect((await c.stat('/many')).kind).toBe('folder');
      await server.kill();
      await expect(c.list('/many')).rejects.toMatchObject({ code: 'service_not_available' });
    } finally {
      await c.close();
      await server.restart();
    }
  });

  it('an idle session does not keep the program running', () => {
    // A program that stats once and never closes its connector ends when its work is done, not
    // when the idle session's minute is up (the run is stopped after 30 s).
    const script = join(scratchDir('smb-idle-exit'), 'idle.ts');
    writeFileSync(
      script,
      `import { SmbConnector } from ${JSON.stringify(resolve('src-main/connectors/smb'))};
       const c = new SmbConnector(${JSON.stringify(smbOptionsFor(server))});
       console.log('kind', (await c.stat('/many')).kind);\n`,
    );
    const r = spawnSync(process.execPath, ['scripts/run-ts.mjs', script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stdout).toContain('kind folder');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
  });
});

// spec 1, Folders (list contents) and "Get metadata": a session's answers arrive in smbclient's
// buffered writes, each answer bounded by its own markers however the writes fall.
describe('smb session output', () => {
  let server: Samba;
  const many = 3000;
  const longCount = 2500;
  /** Names that read like smbclient's reports of a failure. */
  const statusNames = ['NT_STATUS_ACCESS_DENIED', 'NT_STATUS_NO_SUCH_FILE listing x', 'NT_STATUS_CONNECTION_RESET'];

  beforeAll(async () => {
    // Names that read like the session's own lines: the flush command, a "not found" report.
    server = await sambaWithMany(many, ['help', 'command not found', 'tributary-0-1-end', 'Try help']);
    mkdirSync(join(server.shareDir, 'names'));
    for (let n = 1; n <= 120; n++) writeFileSync(join(server.shareDir, 'names', 'n'.repeat(n)), 'z'.repeat(n));
    // Long names: an answer of ~750 KB, more than the socket between smbclient and us holds.
    mkdirSync(join(server.shareDir, 'long'));
    for (let i = 0; i < longCount; i++) writeFileSync(join(server.shareDir, 'long', `${String(i).padStart(4, '0')}-${'l'.repeat(200)}`), '');
    // Names of 1- to 4-byte UTF-8 characters, of every length up to 60 characters: line ends and
    // smbclient's 2 KiB writes fall inside characters and between them.
    mkdirSync(join(server.shareDir, 'wide'));
    for (let n = 1; n <= 60; n++) for (const ch of ['é', '日', '😀']) writeFileSync(join(server.shareDir, 'wide', `${n}${ch.repeat(n)}`), '');
    for (const name of statusNames) writeFileSync(join(server.shareDir, 'wide', name), '');
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Write system calls the session processes made so far (/proc/<pid>/io), by pid. */
  const writes = (pids: number[]) => new Map(pids.map((pid) => [pid, Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1])]));

  it('a listing reaches the session in buffered writes, not one write per entry', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      await c.stat('/many');
      const before = writes(c.sessionPids());
      const listed = await c.list('/many');
      expect(listed.length).toBe(many + 4);
      const after = writes(c.sessionPids());
      let made = 0;
      for (const [pid, n] of after) made += n - (before.get(pid) ?? 0);
      // A line a write is more than 3,000; 2 KiB writes of ~150 KB of output are under 100
      // (plus the few writes to the server).
      expect(made).toBeLessThan(many / 10);
    } finally {
      await c.close();
    }
  });

  it('a listing of entries named like the session\'s own lines is whole', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      const names = (await c.list('/many')).map((e) => e.name);
      expect(names.length).toBe(many + 4);
      expect(names).toEqual(expect.arrayContaining(['help', 'command not found', 'tributary-0-1-end', 'Try help', 'entry-0.txt', `entry-${many - 1}.txt`]));
    } finally {
      await c.close();
    }
  });

  it('a listing hands each entry over while smbclient is still answering, in the order it returns them', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    let pid = 0;
    try {
      await c.stat('/long');
      pid = c.sessionPids()[0]!;
      const handed: Entry[] = [];
      let handedWhileStopped = -1;
      const listed = await c.list('/long', (e) => {
        handed.push(e);
        if (handed.length > 1) return;
        // smbclient stops with most of its answer unwritten (the socket holds a few hundred KB
        // at most): the entries handed over until it goes on were made from what had arrived.
        process.kill(pid, 'SIGSTOP');
        setTimeout(() => {
          handedWhileStopped = handed.length;
          process.kill(pid, 'SIGCONT');
        }, 300);
      });
      expect(listed).toHaveLength(longCount);
      expect(handedWhileStopped).toBeGreaterThan(0);
      expect(handedWhileStopped).toBeLessThan(longCount);
      expect(handed).toHaveLength(listed.length);
      expect(handed.every((e, i) => e === listed[i])).toBe(true);
    } finally {
      if (pid) process.kill(pid, 'SIGCONT');
      await c.close();
    }
  });

  it('a session killed while its listing is handed over is replaced, and the listing asked again hands every entry over from the start', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      await c.stat('/long');
      const [pid] = c.sessionPids();
      const handed: Entry[] = [];
      const listed = await c.list('/long', (e) => {
        if (handed.push(e) === 1) process.kill(pid!, 'SIGKILL');
      });
      expect(c.sessionPids()).not.toContain(pid);
      expect(listed).toHaveLength(longCount);
      // What the killed session handed over came first; the listing returned is the new one's.
      const again = handed.slice(handed.length - listed.length);
      expect(handed.length).toBeGreaterThan(listed.length);
      expect(again.every((e, i) => e === listed[i])).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('a listing read as it arrives keeps names whose characters its pieces cut, and names like failure reports', async () => {
    const c = new SmbConnector(smbOptionsFor(server));
    try {
      const expected: string[] = [...statusNames];
      for (let n = 1; n <= 60; n++) for (const ch of ['é', '日', '😀']) expected.push(`${n}${ch.repeat(n)}`);
      const handed: string[] = [];
      const listed = await c.list('/wide', (e) => handed.push(e.name));
      expect(listed.map((e) => e.name).sort()).toEqual(expected.sort());
      expect(handed.sort()).toEqual(expected);
      // Asked with its own entry, as the storage service asks a folder's page.
      const [self, children] = await Promise.all([c.stat('/wide'), c.list('/wide')]);
      expect(self.kind).toBe('folder');
      expect(children.map((e) => e.name).sort()).toEqual(expected);
    } finally {
      await c.close();
    }
  });

  it('each answer holds its own output only, wherever the buffered writes end', async () => {
    const smb = new Smbclient(smbOptionsFor(server));
    try {
      // Answers of every length from 1 to 120 name bytes, three rounds: the ends of smbclient's
      // 2 KiB writes fall at a different place of each answer and its markers.
      for (let round = 0; round < 3; round++) {
        for (let n = 1; n <= 120; n++) {
          const name = 'n'.repeat(n);
          const { output } = await smb.commands([`ls "\\names\\${name}"`], { read: true });
          const lines = output.split('\n').filter((l) => l.trim());
          expect(lines).toHaveLength(2);
          expect(lines[0]).toMatch(new RegExp(`^  ${name} +[A-Z]+ +${n}  `));
          expect(lines[1]).toMatch(/blocks of size/);
        }
        expect((await smb.commands(['pwd'], { read: true })).output).toMatch(/^Current directory is \\\\[^\n]+\\\n$/);
      }
    } finally {
      smb.close();
    }
  });

  it('an answer ends without waiting for more output, however little smbclient prints for help', async () => {
    // An smbclient whose `help` prints little: the wrapper turns every `help` line into `pwd`
    // (40 bytes). Each request must still end, by output the session itself causes, or reads
    // would wait out their quiet time and changes hang.
    const dir = scratchDir('smb-short-help');
    const wrapper = join(dir, 'smbclient');
    writeFileSync(wrapper, `#!/bin/sh\nwhile IFS= read -r line; do [ "$line" = help ] && line=pwd; printf '%s\\n' "$line"; done | smbclient "$@"\n`);
    chmodSync(wrapper, 0o755);
    const c = new SmbConnector(smbOptionsFor(server, { smbclient: wrapper }), { readQuietMs: 5000 });
    /** Fails a change that hangs (changes have no quiet time of their own). */
    const orHang = <T,>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer in 20 s')), 20_000).unref())]);
    try {
      expect((await c.stat('/names')).kind).toBe('folder');
      expect(await c.list('/names')).toHaveLength(120);
      expect((await orHang(c.mkdir('/short-help'))).kind).toBe('folder');
      expect((await orHang(c.features.move!('/short-help', '/short-help-2'))).name).toBe('short-help-2');
      await orHang(c.remove('/short-help-2', { recursive: false }));
      await expect(c.stat('/short-help-2')).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await c.close();
    }
  }, 60_000);

  it("smbclient's reports on stderr (a transfer's) are part of the answer they belong to", async () => {
    const smb = new Smbclient(smbOptionsFor(server));
    const local = join(scratchDir('smb-stderr'), 'got.txt');
    try {
      for (let n = 1; n <= 5; n++) {
        const { output } = await smb.commands([`get "\\names\\${'n'.repeat(n)}" "${local}"`]);
        expect(output).toMatch(new RegExp(`getting file \\\\names\\\\${'n'.repeat(n)} of size ${n} as `));
        expect((await smb.commands(['pwd'])).output).not.toMatch(/getting file/);
      }
    } finally {
      smb.close();
    }
  });
});
