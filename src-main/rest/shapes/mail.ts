/**
 * Serializers from MailService objects to the spec 2 (email API v1) wire objects. Pure
 * functions: the REST layer calls one method of MailService and one of these per endpoint.
 */
import type { MailFile, MailFolder, MailLabel, MailMessage, MailPage, MailPerson } from '../../contract/mail';

export interface V1Context {
  /** URL of a file under the storage API, e.g. `${base}/v1/accounts/${account}/storage/files/${id}`. */
  fileHref(fileId: string): string;
}

export const toV1Person = (p: MailPerson) => ({ email: p.email, name: p.name, type: 'person' as const, api: 'email' as const });

export const toV1Label = (l: MailLabel) => ({ id: l.id, name: l.name, type: 'label' as const, api: 'email' as const });

export const toV1Folder = (f: MailFolder) => ({ id: f.id, name: f.name, type: 'folder' as const, api: 'email' as const });

export const toV1File = (f: MailFile, ctx: V1Context) => ({
  id: f.id,
  name: f.name,
  mime_type: f.mimeType,
  size: f.size,
  href: ctx.fileHref(f.id),
  type: 'file' as const,
  api: 'storage' as const,
});

export function toV1Message(m: MailMessage, ctx: V1Context) {
  return {
    id: m.id,
    created: m.created,
    thread_id: m.threadId,
    // Spec 2 names folder_id for services B and C; IMAP has real folders, so Tributary fills it.
    folder_id: m.folderId,
    labels: m.labels.map(toV1Label),
    subject: m.subject,
    from: m.from ? toV1Person(m.from) : null,
    to: m.to.map(toV1Person),
    cc: m.cc.map(toV1Person),
    bcc: m.bcc.map(toV1Person),
    snippet: m.snippet,
    text_body: m.textBody,
    body: m.htmlBody,
    rfc822: m.rfc822 ? toV1File(m.rfc822, ctx) : null,
    attachments: m.attachments ? m.attachments.map((a) => toV1File(a, ctx)) : null,
    raw: m.raw,
    type: 'message' as const,
    api: 'email' as const,
  };
}

/** `total`: the whole list's size; label and folder lists are one page, so it is their count. */
export function toV1List<T, U>(objects: T[], map: (o: T) => U, page: string, nextPage: string | null, total = objects.length) {
  return { total, count: objects.length, page, next_page: nextPage, objects: objects.map(map), type: 'object_list' as const, api: 'email' as const };
}

export const toV1MessageList = (p: MailPage, ctx: V1Context) => toV1List(p.objects, (m) => toV1Message(m, ctx), p.page, p.nextPage, p.total);
