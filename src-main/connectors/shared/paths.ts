/**
 * POSIX path helpers for upstream ids. Paths are absolute, '/' is the root, never a trailing
 * slash. Names are validated here once for every backend.
 */
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

/** The n-th conflict-free candidate: "name (n).ext" (spec 1, upload rules). */
export function numberedName(name: string, n: number): string {
  const [stem, ext] = splitExtension(name);
  return `${stem} (${n})${ext}`;
}
