/**
 * A kept-alive WebDAV connection the server closed while Tributary's event loop was busy
 * (spec 1, Errors: a request is not failed with service_not_available while the server is up).
 *
 * Apache closes an idle connection after KeepAliveTimeout; undici stops reusing it a margin
 * before that (2 s), on a timer. When the event loop is blocked past the server's timeout,
 * neither that timer nor the server's FIN has been seen, so the next request is written on a
 * socket the server already closed and fails with "other side closed". Safe methods (GET,
 * HEAD, PROPFIND) are sent again once on a fresh connection; unsafe ones are not.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebDavConnector } from '../../src-main/connectors/webdav';
import { options as webdavSchema } from '../../src-main/connectors/webdav/options';
import { startApache, webdavOptions, type ApacheServer } from '../servers/apache';

/** Apache's idle timeout in seconds: undici keeps the socket for this minus its 2 s margin. */
const KEEP_ALIVE_S = 3;

/** Blocks the event loop (as a long synchronous job in the app would) for `ms`. */
function blockLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('WebDAV stale kept-alive connection (spec 1, Errors)', () => {
  let apache: ApacheServer;
  let dav: WebDavConnector;

  beforeAll(async () => {
    apache = await startApache({ keepAliveTimeout: KEEP_ALIVE_S });
    dav = new WebDavConnector(webdavSchema.parse(webdavOptions(apache)));
    await dav.write('/a.txt', Readable.from([Buffer.from('hello')]), { size: 5 });
  });

  afterAll(async () => {
    await dav?.close();
    await apache?.stop();
  });

  it.each([
    ['PROPFIND (stat)', () => dav.stat('/a.txt').then((e) => e.size)],
    ['PROPFIND (list)', () => dav.list('/').then((l) => l.map((e) => e.name))],
    [
      'GET (read)',
      async () => {
        const chunks: Buffer[] = [];
        for await (const c of await dav.read('/a.txt')) chunks.push(c as Buffer);
        return Buffer.concat(chunks).toString();
      },
    ],
  ] as const)('%s on a socket the server closed during a blocked event loop is sent again', async (_name, op) => {
    const expected = await op();
    await dav.stat('/'); // the request before the busy stretch; its connection stays open
    blockLoop(KEEP_ALIVE_S * 1000 + 1000); // the server closes it meanwhile; nobody reads the FIN
    await expect(op()).resolves.toEqual(expected);
  });
});
