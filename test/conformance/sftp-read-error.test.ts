// spec 1, "Download a file" and Errors: a read that the SFTP server answers with a failure fails
// the download with that error, also while the reader is paused with reads in flight; never a
// short file taken for the whole one, never an unhandled rejection (which ends a Node process).
// Real OpenSSH sshd (notes/test-servers.md §7) reading a real disk error: the file lies on an
// ext2 image mounted through a loop device that is then shrunk, so every block past the cut
// answers EIO (needs root, loop devices and e2fsprogs' mkfs.ext2 and debugfs).
import { randomBytes } from 'node:crypto';
import { chmodSync, createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SftpConnector } from '../../src-main/connectors/sftp';
import { ServiceError } from '../../src-main/errors';
import { startSshd, type Sshd } from '../servers/sshd';
import { run, scratchDir } from '../servers/util';

const MiB = 1 << 20;
const BLOCK = 4096;

/** Mounting an image needs root and loop devices, which not every container has. */
const canMount = process.getuid?.() === 0 && existsSync('/dev/loop-control');

describe.skipIf(!canMount)('sftp download of a file with a disk error part-way (real sshd)', () => {
  let server: Sshd;
  let c: SftpConnector;
  let work: string;
  let mountPoint: string;
  let loop: string | undefined;
  let mounted = false;

  beforeAll(async () => {
    server = await startSshd();
    work = scratchDir('sftp-read-error');
    const src = join(work, 'src');
    mkdirSync(src);
    chmodSync(src, 0o755);
    writeFileSync(join(src, 'data.bin'), randomBytes(8 * MiB), { mode: 0o644 });
    const image = join(work, 'disk.img');
    run('mkfs.ext2', ['-q', '-F', '-b', String(BLOCK), '-d', src, image, '16M']);
    // The disk block holding the file's byte 3 MiB: the device ends there. Reads past 1 MiB
    // (what the paused stream buffers) and within 4 MiB (the reads in flight) then fail.
    const cut = Number(/(\d+)\s*$/.exec(run('debugfs', ['-R', `bmap /data.bin ${(3 * MiB) / BLOCK}`, image]))![1]);
    loop = run('losetup', ['-f', '--show', image]).trim();
    // No readahead: a read fails where the file's blocks leave the device, not a window before.
    run('blockdev', ['--setra', '0', loop]);
    mountPoint = join(server.dataDir, 'disk');
    mkdirSync(mountPoint);
    run('mount', ['-o', 'ro', loop, mountPoint]);
    mounted = true;
    run('truncate', ['-s', String(cut * BLOCK), image]);
    run('losetup', ['-c', loop]);
    c = new SftpConnector({ host: server.host, port: server.port, username: server.username, password: server.password, root: mountPoint }, work);
  });

  afterAll(async () => {
    await c?.close();
    if (mounted) run('umount', ['-l', mountPoint]);
    if (loop) run('losetup', ['-d', loop]);
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /**
   * Runs `body` with a listener for unhandled rejections (`rejected` settles at the first one);
   * what `body` gave and every unhandled rejection seen.
   */
  const watchingRejections = async <T>(body: (rejected: Promise<string>) => Promise<T>) => {
    const unhandled: unknown[] = [];
    let seen!: () => void;
    const rejected = new Promise<string>((resolve) => (seen = () => resolve('unhandled rejection')));
    const onUnhandled = (e: unknown) => {
      unhandled.push(e);
      seen();
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      return { outcome: await body(rejected), unhandled };
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  };

  it('a reader paused with reads in flight: the failed read errors the stream at once, no unhandled rejection', async () => {
    const { outcome, unhandled } = await watchingRejections(async (rejected) => {
      const stream = await c.read('/data.bin');
      const failed = new Promise<unknown>((resolve) => {
        stream.once('error', resolve);
        stream.once('end', () => resolve('ended'));
        // A slow consumer: one chunk, then it stops reading (a browser that stopped taking bytes).
        stream.once('data', () => stream.pause());
      });
      const first = await Promise.race([failed, rejected]);
      stream.destroy();
      return first;
    });
    expect(unhandled).toEqual([]);
    expect(outcome).toBeInstanceOf(ServiceError);
    expect((outcome as ServiceError).code).toBe('upstream_error');
    expect((outcome as ServiceError).message).toMatch(/^Reading "\/data.bin": Failure/);
  });

  it('piped into a file: the download fails with the server failure, not a short file', async () => {
    const { outcome, unhandled } = await watchingRejections(async () =>
      pipeline(await c.read('/data.bin'), createWriteStream(join(work, 'piped.bin'))).then(
        () => 'ended',
        (e: unknown) => e,
      ),
    );
    expect(unhandled).toEqual([]);
    expect(outcome).toBeInstanceOf(ServiceError);
    expect((outcome as ServiceError).message).toMatch(/^Reading "\/data.bin": Failure/);
  });
});
