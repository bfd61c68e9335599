/**
 * Mail ids: opaque and authenticated (IdCodec, the same key as storage ids), each carrying the
 * account and what it names, as newline-separated fields after a one-letter kind:
 * `f` folder path; `m` folder, UIDVALIDITY and UID of a message; `l` a label (IMAP keyword);
 * `r` the raw message and `a` an attachment (by index) of a message — the last two are the
 * "storage file objects" of spec 2; `o` an outbox entry (a sent message until its copy is in
 * Sent, then the id of that copy). This module is the only place that spells these formats.
 */
import { notFound } from '../errors';
import type { IdCodec } from '../ids';
import type { MailStore, MessageRow } from './store';

/** Where a message is: what its message, raw-message and attachment ids carry. */
export interface MessageKey {
  folder: string;
  uidvalidity: number;
  uid: number;
}

export class MailIds {
  constructor(
    private readonly codec: IdCodec,
    private readonly store: MailStore,
  ) {}

  folder(account: number, path: string): string {
    return this.codec.encode(account, `f\n${path}`);
  }

  message(account: number, m: MessageKey): string {
    return this.codec.encode(account, `m\n${keyOf(m)}`);
  }

  raw(account: number, m: MessageKey): string {
    return this.codec.encode(account, `r\n${keyOf(m)}`);
  }

  attachment(account: number, m: MessageKey, index: number): string {
    return this.codec.encode(account, `a\n${keyOf(m)}\n${index}`);
  }

  outbox(account: number, id: number): string {
    return this.codec.encode(account, `o\n${id}`);
  }

  label(account: number, name: string): string {
    return this.codec.encode(account, `l\n${name}`);
  }

  /** The fields of an id of `kind`, or not_found ("`what` was not found") for anything else. */
  decode(account: number, id: string, kind: 'f' | 'm' | 'l', what: string): string[] {
    const parts = this.decoded(account, id)?.split('\n');
    if (!parts || parts[0] !== kind) throw notFound(what);
    return parts.slice(1);
  }

  /** A raw-message or attachment id: its message and (attachments) index; null otherwise. */
  file(account: number, id: string): { kind: 'r' | 'a'; message: MessageKey; index: number } | null {
    const decoded = this.decoded(account, id);
    if (decoded === null || !isMessageFile(decoded)) return null;
    const [kind, folder, uidvalidity, uid, index] = decoded.split('\n');
    return { kind: kind as 'r' | 'a', message: { folder: folder!, uidvalidity: Number(uidvalidity), uid: Number(uid) }, index: Number(index ?? 0) };
  }

  /** The path of a folder id that names a folder this account has. */
  folderPath(account: number, id: string): string {
    const [path] = this.decode(account, id, 'f', 'The folder');
    if (!this.store.folder(account, path!)) throw notFound('The folder');
    return path!;
  }

  /** The cached row of a message id whose message is still where the id says. */
  messageRow(account: number, id: string): MessageRow {
    const outbox = this.decoded(account, id);
    if (outbox?.startsWith('o\n')) {
      const copy = this.store.outboxCopy(account, Number(outbox.slice(2)));
      const row = copy && this.row(account, copy);
      if (!row) throw notFound('The message');
      return row;
    }
    const [folder, uidvalidity, uid] = this.decode(account, id, 'm', 'The message');
    const row = this.row(account, { folder: folder!, uidvalidity: Number(uidvalidity), uid: Number(uid) });
    if (!row) throw notFound('The message');
    return row;
  }

  /** The cached row at `m`, unless the folder's UIDVALIDITY changed since the id was made. */
  row(account: number, m: MessageKey): MessageRow | undefined {
    const row = this.store.byUid(account, m.folder, m.uid);
    return row && row.uidvalidity === m.uidvalidity ? row : undefined;
  }

  private decoded(account: number, id: string): string | null {
    try {
      return this.codec.decode(account, id);
    } catch {
      return null;
    }
  }
}

/** Whether a decoded id names a message file (the raw message or an attachment). */
export const isMessageFile = (decoded: string) => decoded.startsWith('r\n') || decoded.startsWith('a\n');

const keyOf = (m: MessageKey) => `${m.folder}\n${m.uidvalidity}\n${m.uid}`;
