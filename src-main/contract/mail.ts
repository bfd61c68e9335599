/**
 * Mail procedures and events of the typed contract (spec 2), for the mailbox UI. zod only.
 * `mailProcedures` and `mailEvents` are spread into `procedures` and `events` of
 * contract/index.ts; MailService (src-main/mail/service.ts) implements every procedure, one
 * method each (see `mailHandlers` there).
 */
import { z } from 'zod';

const accountId = z.number().int().positive();
const id = z.string().min(1).max(8192);
const iso = z.string();

export const MailPerson = z.object({ name: z.string().nullable(), email: z.string() });
export type MailPerson = z.infer<typeof MailPerson>;

/** A file inside a message (the raw message or an attachment), downloadable by id. */
export const MailFile = z.object({ id: z.string(), name: z.string(), mimeType: z.string(), size: z.number().nullable() });
export type MailFile = z.infer<typeof MailFile>;

export const MailLabel = z.object({ id: z.string(), name: z.string() });
export type MailLabel = z.infer<typeof MailLabel>;

export const MailFolder = z.object({
  id: z.string(),
  /** Full IMAP path, with the server's delimiter. */
  name: z.string(),
  /** Last path segment, for the folder tree. */
  leaf: z.string(),
  delimiter: z.string().nullable(),
  specialUse: z.enum(['inbox', 'sent', 'trash', 'drafts', 'junk', 'archive', 'flagged', 'all']).nullable(),
  total: z.number().int(),
  unread: z.number().int(),
});
export type MailFolder = z.infer<typeof MailFolder>;

export const MailMessage = z.object({
  id: z.string(),
  account: accountId,
  created: iso,
  threadId: z.string(),
  folderId: z.string(),
  folder: z.string(),
  labels: z.array(MailLabel),
  subject: z.string(),
  from: MailPerson.nullable(),
  to: z.array(MailPerson),
  cc: z.array(MailPerson),
  bcc: z.array(MailPerson),
  seen: z.boolean(),
  flagged: z.boolean(),
  answered: z.boolean(),
  hasAttachments: z.boolean(),
  size: z.number().nullable(),
  messageId: z.string().nullable(),
  /** Null until the body was fetched (lists without bodies). */
  snippet: z.string().nullable(),
  textBody: z.string().nullable(),
  /** The original HTML (not sanitized: the UI renders it sandboxed), or the text in a `pre`. */
  htmlBody: z.string().nullable(),
  rfc822: MailFile.nullable(),
  attachments: z.array(MailFile).nullable(),
  raw: z.record(z.string(), z.unknown()),
});
export type MailMessage = z.infer<typeof MailMessage>;

/** A message in the outbox (waiting, being sent, failed, or sent with its copy to Sent pending). */
export const OutboxItem = z.object({
  id: z.number().int(),
  account: accountId,
  state: z.enum(['queued', 'sending', 'sent', 'failed', 'cancelled']),
  subject: z.string(),
  recipients: z.array(z.string()),
  sendAt: iso,
  nextAttemptAt: iso.nullable(),
  attempts: z.number().int(),
  error: z.string().nullable(),
  sentAt: iso.nullable(),
  copy: z.enum(['pending', 'done', 'failed']),
  messageId: z.string(),
});
export type OutboxItem = z.infer<typeof OutboxItem>;

/** Settings found from an address (`mail.discover`): options of the `imap` connector. */
export const DiscoveredSettings = z.object({
  /** Where they came from: autoconfig (ISP or well-known XML), srv (RFC 6186), guess (common names). */
  source: z.enum(['autoconfig', 'srv', 'guess']),
  options: z.object({
    host: z.string(),
    port: z.number().int(),
    tls: z.enum(['tls', 'starttls', 'none']),
    user: z.string(),
    email: z.string(),
    smtp_host: z.string(),
    smtp_port: z.number().int(),
    smtp_tls: z.enum(['tls', 'starttls', 'none']),
  }),
});
export type DiscoveredSettings = z.infer<typeof DiscoveredSettings>;

/** `total`: messages in the whole list (all pages), so clients can show it. */
export const MailPage = z.object({ objects: z.array(MailMessage), page: z.string(), nextPage: z.string().nullable(), total: z.number().int() });
export type MailPage = z.infer<typeof MailPage>;

export const ListMessagesInput = z.object({
  account: accountId,
  page: z.string().optional(),
  pageSize: z.number().int().optional(),
  folderId: z.string().optional(),
  threadId: z.string().optional(),
  labels: z.array(z.string()).optional(),
  after: z.string().optional(),
  before: z.string().optional(),
  /** Fetch (and cache) missing bodies for the page; the UI list leaves this off. */
  bodies: z.boolean().optional(),
});

export const AttachFrom = z.object({ id, parts: z.array(z.number().int().min(0)).optional() });

/** The whole original, quoted for a reply or a forward (`mail.quote`). */
export const MailQuote = z.object({
  subject: z.string(),
  text: z.string(),
  html: z.string(),
  rich: z.boolean(),
  images: z.record(z.string(), z.string()),
  parts: z.array(z.object({ index: z.number().int(), name: z.string(), mimeType: z.string(), size: z.number(), inline: z.boolean() })),
});
export type MailQuote = z.infer<typeof MailQuote>;

/** A message as written: what `mail.send`, `mail.queue` and `mail.saveDraft` take, each extending it. */
const ComposeInput = z.object({
  account: accountId,
  to: z.array(MailPerson).min(1),
  cc: z.array(MailPerson).optional(),
  bcc: z.array(MailPerson).optional(),
  subject: z.string().max(10_000),
  textBody: z.string().optional(),
  htmlBody: z.string().optional(),
  replyTo: id.optional(),
  /** Storage file ids (any account of the user) attached to the message. */
  attachments: z.array(z.object({ account: accountId, id })).optional(),
});
/** Attaches parts of a message of this account (all, or those indexes), inline images with their Content-ID: forwarding, a reopened draft. */
const attachFrom = AttachFrom.optional();

export const mailProcedures = {
  'mail.folders': { input: z.object({ account: accountId }), output: z.array(MailFolder) },
  'mail.createFolder': { input: z.object({ account: accountId, name: z.string().min(1).max(1000) }), output: MailFolder },
  'mail.renameFolder': { input: z.object({ account: accountId, id, name: z.string().min(1).max(1000) }), output: MailFolder },
  'mail.deleteFolder': { input: z.object({ account: accountId, id }), output: z.object({}) },
  'mail.labels': { input: z.object({ account: accountId }), output: z.array(MailLabel) },
  'mail.createLabel': { input: z.object({ account: accountId, name: z.string().min(1).max(200) }), output: MailLabel },
  'mail.deleteLabel': { input: z.object({ account: accountId, id }), output: z.object({}) },
  'mail.list': { input: ListMessagesInput, output: MailPage },
  'mail.search': { input: z.object({ account: accountId, q: z.string().min(1).max(1000), page: z.string().optional(), pageSize: z.number().int().optional() }), output: MailPage },
  'mail.get': { input: z.object({ account: accountId, id }), output: MailMessage },
  'mail.setLabels': { input: z.object({ account: accountId, id, labels: z.array(z.string()) }), output: MailMessage },
  'mail.setFlags': { input: z.object({ account: accountId, id, seen: z.boolean().optional(), flagged: z.boolean().optional() }), output: MailMessage },
  'mail.move': { input: z.object({ account: accountId, id, folderId: id }), output: z.object({}) },
  /** Moves to Trash; deletes for good when already in Trash (or no Trash exists). */
  'mail.delete': { input: z.object({ account: accountId, id }), output: z.object({}) },
  'mail.send': { input: ComposeInput.extend({ attachFrom }), output: MailMessage },
  /** Saves the compose window to Drafts; `replaces` is the previous save of the same draft. */
  'mail.saveDraft': {
    // A draft may lack recipients and a subject.
    input: ComposeInput.extend({ to: z.array(MailPerson).optional(), subject: z.string().max(10_000).optional(), attachFrom, replaces: id.optional() }),
    output: MailMessage,
  },
  /** Syncs now (all folders, or one) instead of waiting for IDLE. */
  'mail.sync': { input: z.object({ account: accountId, folderId: id.optional() }), output: z.object({}) },
  /** The folder the user looks at: IDLE follows it (the inbox is always watched). */
  'mail.open': { input: z.object({ account: accountId, folderId: id.nullable() }), output: z.object({}) },
  /** Reply or forward: the original's whole body quoted (text and sanitized HTML), its inline images and parts; `edit`: a draft's own body, sanitized, to go on writing it. */
  'mail.quote': { input: z.object({ account: accountId, id, mode: z.enum(['reply', 'forward', 'edit']) }), output: MailQuote },
  'mail.contacts': { input: z.object({ account: accountId, prefix: z.string().max(200), limit: z.number().int().min(1).max(50).default(10) }), output: z.array(MailPerson) },
  // ---- the outbox ----
  /**
   * Sends through the outbox after the undo-send delay, or at `sendAt` (send later); `mail.send`
   * sends at once. The answer is the outbox entry (`mail.cancelQueued` takes it back).
   */
  'mail.queue': { input: ComposeInput.extend({ sendAt: iso.optional() }), output: OutboxItem },
  'mail.outbox': { input: z.object({ account: accountId }), output: z.array(OutboxItem) },
  /** Undo send, or cancel a scheduled message: only while it waits. */
  'mail.cancelQueued': { input: z.object({ account: accountId, id: z.number().int() }), output: OutboxItem },
  /** Sends a waiting or failed message now. */
  'mail.sendQueuedNow': { input: z.object({ account: accountId, id: z.number().int() }), output: OutboxItem },
  /** The undo-send delay in seconds (0-30); `seconds` sets it. */
  'mail.undoDelay': { input: z.object({ seconds: z.number().int().min(0).max(30).optional() }), output: z.object({ seconds: z.number().int() }) },
  /** Mail settings from an address: autoconfig, RFC 6186 SRV records, common names (the password is not needed to find them). */
  'mail.discover': { input: z.object({ email: z.string().min(3).max(320) }), output: DiscoveredSettings },
} as const;

export const mailEvents = {
  /** After each committed sync step: `folder` is a folder id, or null when the folder list changed. */
  'mail.changed': z.object({ account: accountId, folder: z.string().nullable(), kind: z.enum(['messages', 'folders']) }),
  /**
   * Per-message changes of an incremental sync step (spec 2 activity categories add, update,
   * delete), as message ids; not emitted for a folder's first sync or a UIDVALIDITY reset.
   */
  'mail.messages': z.object({ account: accountId, folder: z.string(), added: z.array(z.string()), updated: z.array(z.string()), removed: z.array(z.string()) }),
  /** The outbox of an account changed (queued, sent, failed, cancelled, copied to Sent). */
  'mail.outboxChanged': z.object({ account: accountId }),
  /** A tracked open or click was recorded (for the activity engine). */
  'mail.tracked': z.object({ id: z.number().int(), account: z.number().int(), messageId: z.string(), message: z.string().nullable(), kind: z.enum(['email_open', 'email_click']), url: z.string().nullable(), text: z.string().nullable(), subscriptionId: z.string().nullable(), at: iso }),
} as const;
