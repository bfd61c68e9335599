/**
 * Sharing permissions (spec 1, legacy permission endpoints; spec 3, list-based permission
 * updates) over POSIX modes, for the backends whose files have them (local folders, SFTP). A
 * mode names no e-mail addresses, only three principals, so those are the permission ids:
 * `owner` (role `owner`, never changed here), `group` and `others`, each `reader` (r, plus x
 * on folders so they can be entered), `writer` (rw, rwx on folders) or absent (no bits). Only
 * the read/write/search bits of group and others change; owner bits, set-id and sticky bits stay.
 */
import { ServiceError } from '../../errors';
import type { Permission, PermissionChanges } from '../types';

export const POSIX_ROLES = ['reader', 'writer'] as const;
const PRINCIPALS = { group: 3, others: 0 } as const;
type Principal = keyof typeof PRINCIPALS;

function roleOf(bits: number): 'reader' | 'writer' | null {
  if ((bits & 0o4) === 0) return null;
  return bits & 0o2 ? 'writer' : 'reader';
}

/** The permissions a mode grants; `ownerName` is the owning user as the backend names it. */
export function permissionsOfMode(mode: number, ownerName: string): Permission[] {
  const out: Permission[] = [{ id: 'owner', email: null, name: ownerName, role: 'owner' }];
  for (const [p, shift] of Object.entries(PRINCIPALS) as [Principal, number][]) {
    const role = roleOf((mode >> shift) & 0o7);
    if (role) out.push({ id: p, email: null, name: p === 'group' ? 'Group' : 'Everyone else', role });
  }
  return out;
}

/**
 * The mode after `changes` (principal id → role, '' removes): PATCH changes only the named
 * principals, PUT (`replace`) also removes every one not named. Unknown principals or roles,
 * and any change to the owner, are invalid_parameters.
 */
export function modeAfter(mode: number, kind: 'file' | 'folder', changes: PermissionChanges, replace: boolean): number {
  let next = mode;
  const named = new Set<string>();
  for (const [principal, role] of Object.entries(changes)) {
    if (principal === 'owner') throw new ServiceError('invalid_parameters', 'The owner of a file keeps its permissions; only `group` and `others` can be changed.');
    if (!Object.hasOwn(PRINCIPALS, principal)) throw new ServiceError('invalid_parameters', `This account's files have no permission for "${principal}": use \`group\` or \`others\` (POSIX modes name no e-mail addresses).`);
    if (role !== '' && !(POSIX_ROLES as readonly string[]).includes(role)) throw new ServiceError('invalid_parameters', `Role "${role}" is not one of reader, writer (or "" to remove).`);
    named.add(principal);
  }
  for (const [principal, shift] of Object.entries(PRINCIPALS) as [Principal, number][]) {
    if (!named.has(principal) && !replace) continue;
    const role = changes[principal] ?? '';
    const bits = role === 'writer' ? 0o6 : role === 'reader' ? 0o4 : 0;
    const search = bits && kind === 'folder' ? 0o1 : 0;
    next = (next & ~(0o7 << shift)) | ((bits | search) << shift);
  }
  return next;
}
