/** Folders of spec 2 as IMAP mailboxes: list with counts, create, rename, delete. */
import type { Db } from '../cache/db';
import type { MailFolder } from '../contract/mail';
import { ServiceError, invalid } from '../errors';
import type { MailEngine } from './engine';
import type { MailIds } from './ids';
import type { FolderRow, MailStore } from './store';
import { answered } from '../connectors/imap/answered';

const specialOf = (su: string | null, path: string): MailFolder['specialUse'] => {
  if (path.toUpperCase() === 'INBOX') return 'inbox';
  const map: Record<string, MailFolder['specialUse']> = { '\\Sent': 'sent', '\\Trash': 'trash', '\\Drafts': 'drafts', '\\Junk': 'junk', '\\Archive': 'archive', '\\Flagged': 'flagged', '\\All': 'all' };
  return su ? (map[su] ?? null) : null;
};

/** spec 2 Folders: a name the rules above allow may still be one this server refuses. */
function checkFolderName(name: unknown): asserts name is string {
  // oxlint-disable-next-line no-control-regex -- excluding control characters is the point
  if (typeof name !== 'string' || !name.trim() || name.length > 1000 || /[\x00-\x1f\x7f*%]/.test(name)) {
    throw invalid('A folder name is 1 to 1000 characters without controls, * or %.');
  }
}

export class MailFolders {
  constructor(
    private readonly db: Db,
    private readonly store: MailStore,
    private readonly ids: MailIds,
    private readonly engine: MailEngine,
  ) {}

  private toFolder(account: number, f: FolderRow): MailFolder {
    const counts = this.db
      .prepare('SELECT count(*) AS total, coalesce(sum(seen = 0), 0) AS unread FROM mail_messages WHERE account_id = ? AND folder = ?')
      .get(account, f.path) as { total: number; unread: number };
    return {
      id: this.ids.folder(account, f.path),
      name: f.path,
      leaf: f.name,
      delimiter: f.delimiter,
      specialUse: specialOf(f.special_use, f.path),
      total: counts.total,
      unread: counts.unread,
    };
  }

  async list(account: number): Promise<MailFolder[]> {
    await this.engine.ready(account);
    return this.store
      .folders(account)
      .filter((f) => f.selectable)
      .map((f) => this.toFolder(account, f));
  }

  async get(account: number, id: string): Promise<MailFolder> {
    await this.engine.ready(account);
    const path = this.ids.folderPath(account, id);
    return this.toFolder(account, this.store.folder(account, path)!);
  }

  /**
   * spec 3 `monitored_resources` of a mail account: a folder id of `GET /email/folders` (or a
   * folder path, as the default INBOX is written); anything else is invalid_parameters (400).
   */
  async checkMonitored(account: number, resource: string): Promise<void> {
    await this.engine.ready(account);
    if (this.store.folders(account).some((f) => f.path.toLowerCase() === resource.toLowerCase())) return;
    try {
      this.ids.folderPath(account, resource);
    } catch {
      throw invalid(`Monitored resource "${resource}" is not a folder of this mail account; use a folder id from GET /email/folders.`);
    }
  }

  private taken(account: number, name: string, path: string): ServiceError {
    return new ServiceError('naming_conflict', `A folder named "${name}" already exists.`, { conflictingResourceId: this.ids.folder(account, path) });
  }

  async create(account: number, name: unknown): Promise<MailFolder> {
    checkFolderName(name);
    const sync = await this.engine.ready(account);
    const existing = this.store.folders(account).find((f) => f.path.toLowerCase() === name.toLowerCase());
    if (existing) throw this.taken(account, name, existing.path);
    const created = await sync.command(async (c) => answered(await c.mailboxCreate(name), `Creating ${name}`)).catch(refusedName);
    await sync.syncFolders();
    const path = created.path;
    await sync.syncFolder(path);
    return this.get(account, this.ids.folder(account, path));
  }

  async rename(account: number, id: string, name: unknown): Promise<MailFolder> {
    checkFolderName(name);
    const sync = await this.engine.ready(account);
    const path = this.ids.folderPath(account, id);
    if (path.toUpperCase() === 'INBOX') throw invalid('The inbox cannot be renamed.');
    if (name === path) return this.get(account, id);
    const clash = this.store.folders(account).find((f) => f.path.toLowerCase() === name.toLowerCase() && f.path !== path);
    if (clash) throw this.taken(account, name, clash.path);
    const delimiter = this.store.folder(account, path)!.delimiter;
    if (sync.watching.includes(path)) await sync.watch({ inbox: this.engine.inboxPath(account), open: null });
    const renamed = await sync
      .command(async (c) => {
        if (c.mailbox && c.mailbox.path === path) answered(await c.mailboxOpen('INBOX', { readOnly: true }), 'Opening INBOX');
        return answered(await c.mailboxRename(path, name), `Renaming ${path}`);
      })
      .catch(refusedName);
    const to = renamed.newPath ?? name;
    // UIDs and UIDVALIDITY survive a rename on a conforming server: keep the cached messages.
    this.db.transaction(() => this.store.renameFolder(account, path, to, delimiter))();
    await sync.syncFolders();
    await sync.syncFolder(to);
    return this.get(account, this.ids.folder(account, to));
  }

  async delete(account: number, id: string): Promise<void> {
    const sync = await this.engine.ready(account);
    const path = this.ids.folderPath(account, id);
    if (path.toUpperCase() === 'INBOX') throw invalid('The inbox cannot be deleted.');
    if (sync.watching.includes(path)) await sync.watch({ inbox: this.engine.inboxPath(account), open: null });
    await sync.command(async (c) => {
      if (c.mailbox && c.mailbox.path === path) answered(await c.mailboxOpen('INBOX', { readOnly: true }), 'Opening INBOX');
      answered(await c.mailboxDelete(path), `Deleting ${path}`);
    });
    this.db.transaction(() => this.store.deleteFolder(account, path))();
    await sync.syncFolders();
  }
}

/**
 * The server said NO to a folder name (Dovecot: a `/`, `..`, too long): that is the caller's
 * input, so invalid_parameters with the server's words, not an upstream failure.
 */
function refusedName(e: unknown): never {
  const cause = (e as { cause?: { responseStatus?: string; responseText?: string } })?.cause;
  if (e instanceof ServiceError && e.code === 'upstream_error' && cause?.responseStatus === 'NO') {
    throw new ServiceError('invalid_parameters', `The mail server refused this folder name: ${cause.responseText ?? 'no reason given'}.`);
  }
  throw e;
}
