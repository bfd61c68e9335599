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
import { wrapText } from './body';
import type { MailEngine } from './engine';
import type { MailIds } from './ids';
import type { MailMessages } from './messages';
import type { MailStore, MessageRow } from './store';
import { messageIds, type MailSync } from './sync';
import { instrumentHtml, type Tracker } from './tracking';

export interface SendInput {
  to: MailPerson[] | { email: string; name?: string | null }[];
  subject: string;
  cc?: { email: string; name?: string | null }[];
  bcc?: { email: string; name?: string | null }[];
  text_body?: string;
  body?: string;
  /** Id of the message this one answers (spec 2 `reply_to`). */
  reply_to?: string;
  tracking?: { opens?: boolean; clicks?: boolean; subscription_id?: string };
}

export interface SendAttachment {
  name: string;
  content: Readable | Buffer;
  mimeType?: string;
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
}

const EMAIL = /^[^\s@<>",;]+@[^\s@<>",;]+$/;

export class MailOutgoing {
  constructor(private readonly deps: OutgoingDeps) {}

  /**
   * spec 2 "Send": composes the message, sends it over the account's pooled SMTP transport,
   * appends a copy to Sent (\Seen) and returns that copy. `reply_to` sets In-Reply-To and
   * References from the cached original and marks it \Answered.
   */
  async send(account: number, input: SendInput, files: SendAttachment[] = []): Promise<MailMessage> {
    const m = await this.compose(account, input, files, { draft: false });
    await m.connector.send(m.wire!, { from: m.connector.address, to: m.recipients });
    const row = await this.file(account, m.sync, m.copy, '\\Sent', 'Sent', ['\\Seen'], m.date, m.messageId);
    if (m.original) {
      const o = m.original;
      await m.sync.write(o.folder, (c) => c.messageFlagsAdd(String(o.uid), ['\\Answered'], { uid: true })).catch(() => {});
    }
    if (!row) throw new ServiceError('upstream_error', 'The message was sent, but its copy in Sent could not be read back.');
    return (await this.deps.messages.toMessages(account, [row], true))[0]!;
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
    const attachments = await Promise.all(files.map(async (f) => ({ filename: f.name, content: await readAll(f.content), contentType: f.mimeType })));
    const date = new Date();
    const mail = {
      from: connector.address,
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
    return { sync, connector, wire, copy, date, messageId, original, recipients: [...to, ...cc, ...bcc].map((p) => p.address) };
  }

  /** Appends `raw` to the folder of `specialUse` (created as `fallback` if missing) and returns the cached copy. */
  private async file(account: number, sync: MailSync, raw: Buffer, specialUse: string, fallback: string, flags: string[], date: Date, messageId: string): Promise<MessageRow | undefined> {
    const { store, db } = this.deps;
    let folder = store.folders(account).find((f) => f.special_use === specialUse) ?? store.folder(account, fallback);
    if (!folder) {
      await sync.command((c) => c.mailboxCreate(fallback));
      await sync.syncFolders();
      folder = store.folder(account, fallback)!;
    }
    const path = folder.path;
    // imapflow keeps only flags the selected mailbox's PERMANENTFLAGS allow: select it first.
    const appended = await sync.command(async (c) => {
      await c.mailboxOpen(path);
      return c.append(path, raw, flags, date);
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
