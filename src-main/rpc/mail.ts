/**
 * The mail procedures of contract/mail.ts, one MailService call each, spread into
 * rpc/handlers.ts beside the other procedures.
 */
import type { z } from 'zod';
import type { MailMessage, mailProcedures } from '../contract/mail';
import type { SettingsStore } from '../cache/queries/settings';
import { discoverOptionsFromEnv, discoverSettings } from '../mail/autoconfig';
import { composeQuote, withInlineImages } from '../mail/body';
import { closeAll, type SendAttachment } from '../mail/outgoing';
import type { MailService } from '../mail/service';
import { DEFAULT_UNDO_SEND_SECONDS, SETTING_UNDO_SEND_SECONDS } from '../services/settings-keys';
import type { StorageService } from '../services/storage';

type P = typeof mailProcedures;
export type MailHandlers = { [K in keyof P]: (input: z.output<P[K]['input']>) => Promise<z.output<P[K]['output']>> };

export function mailHandlers(mail: MailService, storage: Pick<StorageService, 'download'>, settings: SettingsStore): MailHandlers {
  /**
   * Attachments chosen from any storage account are streamed from there into `send`. Every file
   * is closed afterwards, and all are when one cannot be opened: a refused send never reads them.
   */
  const withFiles = async <T>(list: { account: number; id: string }[] | undefined, send: (files: SendAttachment[]) => Promise<T>): Promise<T> => {
    const opened = await Promise.allSettled(
      (list ?? []).map(async (a) => {
        const { resource, stream } = await storage.download(a.account, a.id);
        return { name: resource.name, content: stream, mimeType: resource.mimeType ?? undefined };
      }),
    );
    const files = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    try {
      const failed = opened.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      return await send(files);
    } finally {
      closeAll(files);
    }
  };
  /** The cached source of a message whose body was just fetched (by mail.messages.get). */
  const rawOf = (account: number, id: string) => mail.store.body(mail.ids.messageRow(account, id).id)?.raw;
  /** The mailbox UI's message: inline (cid:) images as data: URLs, which the reading pane can show. */
  const forReader = async (account: number, m: MailMessage) => withInlineImages(m, rawOf(account, m.id));
  return {
    'mail.folders': ({ account }) => mail.folders.list(account),
    'mail.createFolder': ({ account, name }) => mail.folders.create(account, name),
    'mail.renameFolder': ({ account, id, name }) => mail.folders.rename(account, id, name),
    'mail.deleteFolder': async ({ account, id }) => (await mail.folders.delete(account, id), {}),
    'mail.labels': ({ account }) => mail.labels.list(account),
    'mail.createLabel': ({ account, name }) => mail.labels.create(account, name),
    'mail.deleteLabel': async ({ account, id }) => (await mail.labels.delete(account, id), {}),
    'mail.list': ({ account, page, pageSize, folderId, threadId, labels, after, before, bodies }) =>
      mail.messages.list(account, { page, page_size: pageSize, folder_id: folderId, thread_id: threadId, labels, after, before, bodies: bodies ?? false }),
    'mail.search': ({ account, q, page, pageSize }) => mail.messages.search(account, { q, page, page_size: pageSize, bodies: false }),
    'mail.get': async ({ account, id }) => forReader(account, await mail.messages.get(account, id)),
    'mail.setLabels': async ({ account, id, labels }) => forReader(account, await mail.messages.update(account, id, { label_names: labels })),
    'mail.setFlags': async ({ account, id, seen, flagged }) => forReader(account, await mail.messages.setFlags(account, id, { seen, flagged })),
    'mail.move': async ({ account, id, folderId }) => (await mail.messages.move(account, id, folderId), {}),
    'mail.delete': async ({ account, id }) => (await mail.messages.delete(account, id), {}),
    'mail.send': async ({ account, to, cc, bcc, subject, textBody, htmlBody, replyTo, attachments, attachFrom }) =>
      withFiles(attachments, (files) => mail.outgoing.send(account, { to, cc, bcc, subject, text_body: textBody, body: htmlBody, reply_to: replyTo, attach_from: attachFrom }, files)),
    'mail.saveDraft': async ({ account, to, cc, bcc, subject, textBody, htmlBody, replyTo, attachments, attachFrom, replaces }) =>
      withFiles(attachments, (files) => mail.outgoing.saveDraft(account, { to, cc, bcc, subject, text_body: textBody, body: htmlBody, reply_to: replyTo, attach_from: attachFrom }, files, replaces)),
    'mail.sync': async ({ account, folderId }) => (await mail.sync(account, folderId), {}),
    'mail.open': async ({ account, folderId }) => (await mail.openFolder(account, folderId), {}),
    'mail.quote': async ({ account, id, mode }) => {
      const m = await mail.messages.get(account, id);
      return composeQuote({ ...m, date: m.created }, rawOf(account, id), mode);
    },
    'mail.contacts': async ({ account, prefix, limit }) => mail.messages.contacts(account, prefix, limit),
    'mail.queue': async ({ account, to, cc, bcc, subject, textBody, htmlBody, replyTo, attachments, sendAt }) =>
      withFiles(attachments, (files) => mail.outgoing.queue(account, { to, cc, bcc, subject, text_body: textBody, body: htmlBody, reply_to: replyTo }, files, { sendAt })),
    'mail.outbox': async ({ account }) => mail.outgoing.outbox.list(account),
    'mail.cancelQueued': async ({ account, id }) => mail.outgoing.outbox.cancel(account, id),
    'mail.sendQueuedNow': async ({ account, id }) => mail.outgoing.outbox.sendNow(account, id),
    'mail.undoDelay': async ({ seconds }) => {
      if (seconds !== undefined) settings.set(SETTING_UNDO_SEND_SECONDS, seconds);
      return { seconds: settings.get<number>(SETTING_UNDO_SEND_SECONDS, DEFAULT_UNDO_SEND_SECONDS) };
    },
    'mail.discover': async ({ email }) => discoverSettings(email, discoverOptionsFromEnv()),
  };
}
