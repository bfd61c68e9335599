/**
 * Sending (spec 2 "Send") and drafts: composes the message (nodemailer's MailComposer), sends it
 * over the account's pooled SMTP transport, and files the copy in Sent or Drafts.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type MailComposer from 'nodemailer/lib/mail-composer';
import type { Db } from '../cache/db';
import type { MailMessage, MailPerson } from '../contract/mail';
import { ServiceError, invalid } from '../errors';
import type { EventBus } from '../services/events';
import { messageParts, wrapText } from './body';
import type { MailEngine } from './engine';
import type { MailIds } from './ids';
import type { MailMessages } from './messages';
import type { MailStore, MessageRow } from './store';
import { MailOutbox, parseSendAt, type OutboxItem, type Outgoing } from './outbox';
import { messageIds, threadIdFor, type MailSync } from './sync';
import { instrumentHtml, type Tracker } from './tracking';
import { answered } from '../connectors/imap/answered';

export interface SendInput {
  to: MailPerson[] | { email: string; name?: string | null }[];
  subject: string;
  cc?: { email: string; name?: string | null }[];
  bcc?: { email: string; name?: string | null }[];
  text_body?: string;
  body?: string;
  /** Id of the message this one answers (spec 2 `reply_to`). */
  reply_to?: string;
  /** Parts of a message of this account to attach (all, or these indexes): forwarding, a reopened draft. */
  attach_from?: { id: string; parts?: number[] };
  tracking?: { opens?: boolean; clicks?: boolean; subscription_id?: string };
}

export interface SendAttachment {
  name: string;
  content: Readable | Buffer;
  mimeType?: string;
}

/**
 * Closes the files opened as a message's attachments (the REST and RPC send paths) once the send
 * is over: read ones are closed already, but a send refused before it read them (a bad
 * recipient, an account not ready, a failed read of an earlier file) leaves the rest open.
 */
export function closeAll(files: SendAttachment[]): void {
  for (const f of files) if (!Buffer.isBuffer(f.content)) f.content.destroy();
}

export interface OutgoingDeps {
  db: Db;
  store: MailStore;
  ids: MailIds;
  engine: MailEngine;
  messages: MailMessages;
  tracker: Tracker;
  /** Public base URL of the tracking endpoints (`{base}/t/o/…`, `{base}/t/c/…`); null when unset. */
  trackingBaseUrl?: () => string | null;
  events: EventBus;
  /** The undo-send delay (setting `mail.undoSendSeconds`, 0-30). */
  undoSendSeconds?: () => number;
}

const EMAIL = /^[^\s@<>",;]+@[^\s@<>",;]+$/;

type Composed = Awaited<ReturnType<MailOutgoing['compose']>>;

/** The outbox's view of a composed message. */
function outgoingOf(m: Composed): Outgoing {
  return {
    messageId: m.messageId,
    subject: m.subject,
    sender: m.connector.address,
    recipients: m.recipients,
    // Only drafts are composed without the SMTP bytes.
    wire: m.wire ?? m.copy,
    copy: m.copy,
    answers: m.original ? { folder: m.original.folder, uidvalidity: m.original.uidvalidity, uid: m.original.uid } : undefined,
  };
}

export class MailOutgoing {
  readonly outbox: MailOutbox;

  constructor(private readonly deps: OutgoingDeps) {
    this.outbox = new MailOutbox({
      db: deps.db,
      engine: deps.engine,
      events: deps.events,
      fileSent: (account, sync, raw, messageId, date) => this.file(account, sync, raw, '\\Sent', 'Sent', ['\\Seen'], date, messageId),
      markAnswered: async (account, key) => {
        const o = this.deps.ids.row(account, key);
        if (!o) return;
        const sync = await this.deps.engine.ready(account);
        await sync.write(o.folder, (c) => c.messageFlagsAdd(String(o.uid), ['\\Answered'], { uid: true }));
      },
    });
  }

  /**
   * spec 2 "Send": composes the message and sends it through the outbox at once, answering after
   * the first attempt: the copy filed in Sent (\Seen); or, when SMTP accepted the message but the
   * copy could not be filed yet, or SMTP could not be reached and the message waits for a retry,
   * the message as composed, with its outbox state in `raw.outbox`. A refusal that retrying
   * cannot fix (authentication, a 5xx reply) is thrown. `reply_to` sets In-Reply-To and
   * References from the cached original, which is marked \Answered once sent.
   */
  async send(account: number, input: SendInput, files: SendAttachment[] = []): Promise<MailMessage> {
    const m = await this.compose(account, input, files, { draft: false });
    const id = this.outbox.enqueue(account, outgoingOf(m), Date.now());
    const error = await this.outbox.attempted(id);
    const r = this.outbox.row(id)!;
    if (error && r.state === 'failed') throw error;
    if (r.copy_state === 'done' && r.copy_folder && r.copy_uid !== null) {
      const row = this.deps.store.byUid(account, r.copy_folder, r.copy_uid);
      if (row) return (await this.deps.messages.toMessages(account, [row], true))[0]!;
    }
    return this.asComposed(account, m, this.outbox.item(account, id));
  }

  /**
   * Sends through the outbox after the undo-send delay (setting, 0-30 s), or at `sendAt` (send
   * later): answers the outbox entry, which `cancel` takes back while it waits.
   */
  async queue(account: number, input: SendInput, files: SendAttachment[] = [], opts: { sendAt?: string | null } = {}): Promise<OutboxItem> {
    const now = Date.now();
    const at = opts.sendAt ? parseSendAt(opts.sendAt, now) : now + 1000 * Math.min(30, Math.max(0, this.deps.undoSendSeconds?.() ?? 0));
    const m = await this.compose(account, input, files, { draft: false });
    return this.outbox.item(account, this.outbox.enqueue(account, outgoingOf(m), at));
  }

  /** A sent or waiting message as composed (its copy is not in Sent yet): the shape of spec 2 Send. */
  private asComposed(account: number, m: Composed, item: OutboxItem): MailMessage {
    const sent = this.deps.store.folders(account).find((f) => f.special_use === '\\Sent') ?? this.deps.store.folder(account, 'Sent');
    const person = (p: { name: string; address: string }) => ({ name: p.name || null, email: p.address });
    return {
      id: this.deps.ids.outbox(account, item.id),
      account,
      created: m.date.toISOString(),
      threadId: threadIdFor(m.messageId, m.inReplyTo ?? null, m.references, m.messageId),
      folderId: sent ? this.deps.ids.folder(account, sent.path) : '',
      folder: sent?.path ?? '',
      labels: [],
      subject: m.subject,
      from: person(m.from),
      to: m.to.map(person),
      cc: m.cc.map(person),
      bcc: m.bcc.map(person),
      seen: true,
      flagged: false,
      answered: false,
      hasAttachments: m.attachments > 0,
      size: m.copy.length,
      messageId: m.messageId,
      snippet: null,
      textBody: m.text ?? null,
      htmlBody: m.html ?? null,
      rfc822: null,
      attachments: null,
      raw: { outbox: { id: item.id, state: item.state, error: item.error, copy: item.copy, next_attempt_at: item.nextAttemptAt } },
    };
  }

  /**
   * Saves a draft (the compose window): appended to Drafts with \Draft and \Seen; `replaces`,
   * the id of the previous save of the same draft, is deleted once the new one is stored.
   * Nothing is sent; recipients and subject may still be empty.
   */
  async saveDraft(account: number, input: Partial<SendInput>, files: SendAttachment[] = [], replaces?: string): Promise<MailMessage> {
    const old = replaces ? this.deps.ids.messageRow(account, replaces) : undefined;
    if (old && !(JSON.parse(old.flags) as string[]).includes('\\Draft')) throw invalid('replaces must be the id of a draft.');
    const m = await this.compose(account, input as SendInput, files, { draft: true });
    const row = await this.file(account, m.sync, m.copy, '\\Drafts', 'Drafts', ['\\Draft', '\\Seen'], m.date, m.messageId);
    if (old) await m.sync.write(old.folder, (c) => c.messageDelete(String(old.uid), { uid: true }));
    if (!row) throw new ServiceError('upstream_error', 'The draft was saved, but could not be read back.');
    return (await this.deps.messages.toMessages(account, [row], true))[0]!;
  }

  /** Validates and builds a message: the bytes for SMTP (no Bcc) and for the mailbox copy. */
  private async compose(account: number, input: SendInput, files: SendAttachment[], opts: { draft: boolean }) {
    const people = (list: unknown, field: string): { name: string; address: string }[] => {
      if (list === undefined || list === null) return [];
      if (!Array.isArray(list)) throw invalid(`${field} must be an array of persons.`);
      return list.map((p) => {
        const email = (p as { email?: unknown })?.email;
        const name = (p as { name?: unknown })?.name;
        if (typeof email !== 'string' || !EMAIL.test(email.trim())) throw invalid(`${field}: every person needs a valid email.`);
        return { name: typeof name === 'string' ? name : '', address: email.trim() };
      });
    };
    if (!input || typeof input !== 'object') throw invalid('The message is missing.');
    const to = people(input.to, 'to');
    if (!to.length && !opts.draft) throw invalid('to must name at least one recipient.');
    if (typeof input.subject !== 'string' && !(opts.draft && input.subject === undefined)) throw invalid('subject is required.');
    const cc = people(input.cc, 'cc');
    const bcc = people(input.bcc, 'bcc');
    if (input.body !== undefined && typeof input.body !== 'string') throw invalid('body must be a string.');
    if (input.text_body !== undefined && typeof input.text_body !== 'string') throw invalid('text_body must be a string.');

    const sync = await this.deps.engine.ready(account);
    const connector = await this.deps.engine.connector(account);
    let inReplyTo: string | undefined;
    let references: string[] = [];
    let original: MessageRow | undefined;
    if (input.reply_to) {
      original = this.deps.ids.messageRow(account, input.reply_to);
      if (original.message_id) {
        inReplyTo = original.message_id;
        references = [...messageIds(original.refs), original.message_id];
      }
    }
    const domain = connector.address.split('@')[1] || 'tributary.invalid';
    const messageId = `<${randomUUID()}@${domain}>`;

    let html = input.body;
    const text = html === undefined ? (input.text_body ?? '') : undefined;
    const t = input.tracking;
    if (t && (t.opens || t.clicks) && !opts.draft) {
      const base = this.deps.trackingBaseUrl?.() ?? null;
      if (!base) throw invalid('Tracking needs the public base URL of Tributary (setting mail.trackingBaseUrl).');
      const src = html ?? wrapText(text ?? '').replace(/https?:\/\/[^\s<>"']+/g, (u) => `<a href="${u}">${u}</a>`);
      const tracker = this.deps.tracker;
      html = instrumentHtml(src, {
        base: base.replace(/\/+$/, ''),
        openToken: t.opens ? tracker.token({ account, messageId, kind: 'open', subscriptionId: t.subscription_id }) : undefined,
        clickToken: t.clicks ? (url, text) => tracker.token({ account, messageId, kind: 'click', url, text, subscriptionId: t.subscription_id }) : undefined,
      });
    }
    const attachments: { filename?: string; content: Buffer; contentType?: string; cid?: string; contentDisposition?: 'inline' | 'attachment' }[] = [];
    if (input.attach_from) {
      // Inline images keep their Content-ID, so the quoted HTML's cid: references still resolve.
      const from = this.deps.ids.messageRow(account, input.attach_from.id);
      await this.deps.engine.ensureBodies(account, [from]);
      const raw = this.deps.store.body(from.id)?.raw;
      const parts = raw ? await messageParts(raw) : [];
      const wanted = input.attach_from.parts;
      parts.forEach((a, i) => {
        if (!wanted || wanted.includes(i)) attachments.push({ filename: a.filename, content: a.content, contentType: a.contentType, cid: a.cid, contentDisposition: a.cid && a.related ? 'inline' : 'attachment' });
      });
    }
    for (const f of files) attachments.push({ filename: f.name, content: await readAll(f.content), contentType: f.mimeType });
    const date = new Date();
    const mail = {
      from: connector.displayName ? { name: connector.displayName, address: connector.address } : connector.address,
      to: to.length ? to : undefined,
      cc: cc.length ? cc : undefined,
      bcc: bcc.length ? bcc : undefined,
      subject: input.subject ?? '',
      messageId,
      date,
      inReplyTo,
      references: references.length ? references.join(' ') : undefined,
      // spec 2: text_body is ignored when body is given.
      ...(html !== undefined ? { html } : { text }),
      attachments,
    };
    // What goes over SMTP has no Bcc header; the mailbox copy keeps it, as mail clients do.
    const wire = opts.draft ? null : await build(mail, false);
    const copy = bcc.length || opts.draft ? await build(mail, true) : wire!;
    return {
      sync,
      connector,
      wire,
      copy,
      date,
      messageId,
      original,
      inReplyTo,
      references,
      subject: mail.subject,
      from: { name: connector.displayName ?? '', address: connector.address },
      to,
      cc,
      bcc,
      text,
      html,
      attachments: attachments.length,
      recipients: [...to, ...cc, ...bcc].map((p) => p.address),
    };
  }

  /** Appends `raw` to the folder of `specialUse` (created as `fallback` if missing) and returns the cached copy. */
  async file(account: number, sync: MailSync, raw: Buffer, specialUse: string, fallback: string, flags: string[], date: Date, messageId: string): Promise<MessageRow | undefined> {
    const { store, db } = this.deps;
    let folder = store.folders(account).find((f) => f.special_use === specialUse) ?? store.folder(account, fallback);
    if (!folder) {
      await sync.command(async (c) => answered(await c.mailboxCreate(fallback), `Creating ${fallback}`));
      await sync.syncFolders();
      folder = store.folder(account, fallback)!;
    }
    const path = folder.path;
    // imapflow keeps only flags the selected mailbox's PERMANENTFLAGS allow: select it first.
    const appended = await sync.command(async (c) => {
      answered(await c.mailboxOpen(path), `Opening ${path}`);
      return answered(await c.append(path, raw, flags, date), `Appending to ${path}`);
    });
    await sync.syncFolder(path);
    return (
      (appended && appended.uid ? store.byUid(account, path, appended.uid) : undefined) ??
      (db.prepare('SELECT * FROM mail_messages WHERE account_id = ? AND folder = ? AND message_id = ?').get(account, path, messageId) as MessageRow | undefined)
    );
  }
}

async function build(mail: ConstructorParameters<typeof MailComposer>[0], keepBcc: boolean): Promise<Buffer> {
  // nodemailer is loaded with the first message composed.
  const { default: Composer } = await import('nodemailer/lib/mail-composer');
  const node = new Composer(mail).compile();
  (node as unknown as { keepBcc: boolean }).keepBcc = keepBcc;
  return node.build();
}

async function readAll(content: Readable | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(content)) return content;
  const chunks: Buffer[] = [];
  for await (const c of content) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}
