/**
 * Which file on disk an `app://tributary/…` URL path may serve: only files below the renderer
 * folder, whatever dot segments or percent-encoding the path carries. No electron import, so
 * it is tested under plain Node.
 */
import { extname, join, normalize, sep } from 'node:path';

export const RENDERER_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/** The absolute file for a URL pathname, or null when it would leave `rendererDir`. */
export function rendererFile(rendererDir: string, pathname: string): string | null {
  let rel: string;
  try {
    rel = decodeURIComponent(pathname === '/' || pathname === '' ? '/index.html' : pathname);
  } catch {
    return null;
  }
  if (rel.includes('\0')) return null;
  const root = normalize(rendererDir + sep);
  const file = normalize(join(root, rel));
  return file.startsWith(root) ? file : null;
}

export function contentType(file: string): string {
  return RENDERER_TYPES[extname(file)] ?? 'application/octet-stream';
}
