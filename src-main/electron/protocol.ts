/**
 * Serves the built renderer from `app://tributary/…` instead of file://: a real origin (so
 * 'self' in the CSP means exactly our bundle), no access to the rest of the disk, and our own
 * response headers (the CSP) on every file.
 */
import { readFile } from 'node:fs/promises';
import { protocol } from 'electron';
import { contentType, rendererFile } from './renderer-files';
import { APP_HOST, APP_SCHEME, RENDERER_CSP } from './security';

/** Must run before the app is ready. */
export function registerAppScheme(): void {
  protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
}

export function serveRenderer(rendererDir: string): void {
  protocol.handle(APP_SCHEME, async (request) => {
    const url = new URL(request.url);
    const file = url.host === APP_HOST ? rendererFile(rendererDir, url.pathname) : null;
    if (!file) return new Response('Not found', { status: 404 });
    try {
      return new Response(await readFile(file), {
        headers: { 'Content-Type': contentType(file), 'Content-Security-Policy': RENDERER_CSP, 'X-Content-Type-Options': 'nosniff' },
      });
    } catch {
      return new Response('Not found', { status: 404 });
    }
  });
}
