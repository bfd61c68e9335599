/**
 * Activity cursors: opaque strings (base64url JSON) holding the account, the log position and,
 * for time-ranged reads, the range of the first request so that follow-up cursors stay in it
 * (spec 3, Activity list).
 */
import { ServiceError } from '../errors';

export interface CursorState {
  /** Account the cursor belongs to; a cursor of another account is refused. */
  a: number;
  /** Log position: the seq of the last activity already returned (0 = before everything). */
  s: number;
  /** [from, until) in epoch ms, fixed by the first time-ranged request. */
  f?: number;
  u?: number;
}

export const AFTER_AUTH = 'after-auth';

/**
 * The upstream checkpoint of a polling follower (legacy `/events/latest` `upstream_cursor`, v2
 * `upstream_checkpoint`): the time of the last walk whose activity is committed. Spec 3 lets it
 * stand for `cursor`: it then means every activity recorded after that walk.
 */
export const walkCheckpoint = (at: Date) => `walk:${at.toISOString()}`;

/** The time of a walk checkpoint, or null when `cursor` is not one. */
export function checkpointTime(cursor: string): number | null {
  const m = /^walk:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/.exec(cursor);
  const t = m ? Date.parse(m[1]!) : NaN;
  // Date.parse rolls an impossible day over (Feb 31 → Mar 2): only a time that reads back as given.
  return Number.isFinite(t) && new Date(t).toISOString() === m![1] ? t : null;
}

export function encodeCursor(c: CursorState): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

export function decodeCursor(accountId: number, cursor: string): CursorState {
  let c: CursorState;
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as CursorState;
  } catch {
    throw new ServiceError('invalid_parameters', 'The `cursor` is not valid.');
  }
  if (!c || typeof c !== 'object' || !Number.isSafeInteger(c.a) || !Number.isSafeInteger(c.s) || c.s < 0) {
    throw new ServiceError('invalid_parameters', 'The `cursor` is not valid.');
  }
  if (c.a !== accountId) throw new ServiceError('invalid_parameters', 'The `cursor` belongs to another account.');
  if ((c.f !== undefined && !isLogTime(c.f)) || (c.u !== undefined && !isLogTime(c.u))) {
    throw new ServiceError('invalid_parameters', 'The `cursor` is not valid.');
  }
  return c;
}

/** Years 0000–9999: what a recording time is compared with as an ISO string (a cursor is the client's to tamper with). */
const isLogTime = (t: unknown): t is number => typeof t === 'number' && t >= -62_167_219_200_000 && t <= 253_402_300_799_999;
