/**
 * POSIX path helpers for upstream ids. Paths are absolute, '/' is the root, never a trailing
 * slash. Names are validated here once for every backend.
 */
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../../errors';

export const ROOT = '/';

export function joinPath(parent: string, name: string): string {
  return parent === ROOT ? `/${name}` : `${parent}/${name}`;
}

export function parentOf(path: string): string {
  if (path === ROOT) return ROOT;
  const i = path.lastIndexOf('/');
  return i <= 0 ? ROOT : path.slice(0, i);
}

export function baseName(path: string): string {
  return path === ROOT ? '' : path.slice(path.lastIndexOf('/') + 1);
}

/** Every ancestor folder, most immediate first, root last; empty for the root itself. */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  let p = path;
  while (p !== ROOT) {
    p = parentOf(p);
    out.push(p);
  }
  return out;
}

export function isInside(path: string, folder: string): boolean {
  return folder === ROOT ? path !== ROOT : path.startsWith(folder + '/');
}

/** Longest file name accepted (bytes of UTF-8), the common limit of file systems and servers. */
export const MAX_NAME_BYTES = 255;

/** Throws invalid_parameters for names no backend can hold safely. */
export function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ServiceError('invalid_parameters', 'A name is required.');
  }
  if (name === '.' || name === '..') throw new ServiceError('invalid_parameters', `"${name}" is not a valid name.`);
  if (name.includes('/')) throw new ServiceError('invalid_parameters', 'Names cannot contain "/".');
  if (name.includes('\\')) throw new ServiceError('invalid_parameters', 'Names cannot contain "\\".');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new ServiceError('invalid_parameters', 'Names cannot contain control characters.');
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) {
    throw new ServiceError('invalid_parameters', `Names are limited to ${MAX_NAME_BYTES} bytes.`);
  }
  if (name.trim() !== name && name.trim().length === 0) throw new ServiceError('invalid_parameters', 'A name cannot be blank.');
  return name.normalize('NFC');
}

/** Splits "report.final.pdf" into ["report.final", ".pdf"]; dot-files keep their name as stem. */
export function splitExtension(name: string): [string, string] {
  const i = name.lastIndexOf('.');
  return i > 0 ? [name.slice(0, i), name.slice(i)] : [name, ''];
}

/**
 * `name` with `suffix` before its extension ("report (2).pdf"), the stem shortened so that the
 * result fits `maxBytes`, keeping the extension whole and never cutting a character (nor a
 * surrogate pair) in two. An extension too long to keep leaves nothing of the stem: the suffix
 * then follows the whole (shortened) name.
 */
export function nameWithSuffix(name: string, suffix: string, maxBytes = MAX_NAME_BYTES): string {
  let [stem, ext] = splitExtension(name);
  if (Buffer.byteLength(suffix + ext) >= maxBytes) [stem, ext] = [name, ''];
  const room = maxBytes - Buffer.byteLength(suffix + ext);
  if (Buffer.byteLength(stem) > room) stem = truncateUtf8(stem, room);
  return `${stem}${suffix}${ext}`;
}

/** The n-th conflict-free candidate: "name (n).ext" (spec 1, upload rules), within MAX_NAME_BYTES. */
export const numberedName = (name: string, n: number): string => nameWithSuffix(name, ` (${n})`);

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes, cut between characters. */
export function truncateUtf8(s: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += ch.length;
  }
  return s.slice(0, end);
}

/**
 * Hidden temporary names writers publish from, the one rule every backend and the storage
 * service share: listings and watches leave them out, resumed uploads accept only them.
 * `part` holds a whole body being written, `upload` a multipart upload's file (offset writes);
 * `tmp` and 16 hex digits are what earlier versions of the local connector wrote, still hidden.
 * (A download's `<target>.tributary-download` is another thing: a partial file on this
 * computer, outside every account, named after its target so that a person recognises it.)
 */
export const TEMP_NAME = /^\.tributary-(?:[0-9a-f]{12}|[0-9a-f]{16})\.(?:part|upload|tmp)$/;
export const tempName = (kind: 'part' | 'upload' = 'part') => `.tributary-${randomBytes(6).toString('hex')}.${kind}`;

/**
 * Throws naming_conflict when `path` exists (server-side moves and copies need a free target);
 * `stat` is the connector's own, so failures other than not_found go through as they are.
 */
export async function assertFree(stat: (path: string) => Promise<unknown>, path: string): Promise<void> {
  const taken = await stat(path).then(
    () => true,
    (e) => (e instanceof ServiceError && e.code === 'not_found' ? false : Promise.reject(e)),
  );
  if (taken) throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
}
