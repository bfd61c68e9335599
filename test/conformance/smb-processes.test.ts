// spec 1, "Download a file": an SMB download of a whole file runs one smbclient process (no
// `ls` before the `get`), and still refuses what it cannot read before the first byte.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmbConnector } from '../../src-main/connectors/smb';
import { smbOptionsFor, startSamba, type Samba } from '../servers/samba';
import { scratchDir } from '../servers/util';
import { textOf } from './storage-suite';

describe('smb downloads without a process per question', () => {
  let server: Samba;
  let c: SmbConnector;
  let log: string;
  const runs = () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length;

  beforeAll(async () => {
    server = await startSamba();
    // smbclient behind a wrapper that counts its runs.
    const dir = scratchDir('smb-processes');
    log = join(dir, 'runs.log');
    writeFileSync(log, '');
    const wrapper = join(dir, 'smbclient');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> '${log}'\nexec smbclient "$@"\n`);
    chmodSync(wrapper, 0o755);
    c = new SmbConnector(smbOptionsFor(server, { smbclient: wrapper }));
    writeFileSync(join(server.shareDir, 'whole.txt'), 'all of it');
    writeFileSync(join(server.shareDir, 'empty.txt'), '');
    mkdirSync(join(server.shareDir, 'folder'));
  });
  afterAll(async () => {
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
});
