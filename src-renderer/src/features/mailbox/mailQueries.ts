/** Mailbox data through React Query; `mail.changed` events invalidate ['mail', account, …]. */
import { useEffect, useMemo } from 'react';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { ALL_DATES } from '../../../../src-main/contract/limits';
import type { MailFolder, MailMessage, MailPage, MailPerson } from '../../../../src-main/contract/mail';
import { keys, useApi } from '../../api/hooks';

export const MAIL_PAGE = 100;
/** The list's window is "everything": the API's default is the last three days. */

export function useMailFolders(account: number) {
  const api = useApi();
  return useQuery({ queryKey: [...keys.mail(account), 'folders'], queryFn: () => api.call('mail.folders', { account }) });
}

/** Newest first, one page at a time: `fetchMore` is called by the list as it nears the end. */
export function useMailLabels(account: number) {
  const api = useApi();
  return useQuery({ queryKey: [...keys.mail(account), 'labels'], queryFn: () => api.call('mail.labels', { account }) });
}

/** A folder's messages, or (label set) every message carrying that label, or search results. */
export function useMessages(account: number, folderId: string | null, search: string, label: string | null = null) {
  const api = useApi();
  const q = search.trim();
  const query = useInfiniteQuery({
    queryKey: [...keys.mail(account), 'list', label ? `label:${label}` : folderId, q],
    enabled: folderId !== null || q !== '' || label !== null,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      q
        ? api.call('mail.search', { account, q, page: pageParam, pageSize: MAIL_PAGE })
        : api.call('mail.list', { account, folderId: label ? undefined : (folderId ?? undefined), labels: label ? [label] : undefined, page: pageParam, pageSize: MAIL_PAGE, ...ALL_DATES }),
    getNextPageParam: (last: MailPage) => last.nextPage ?? undefined,
    retry: false,
  });
  const messages: MailMessage[] = useMemo(() => query.data?.pages.flatMap((p) => p.objects) ?? [], [query.data]);
  return { messages, query };
}

export interface Thread {
  id: string;
  /** Newest first. */
  messages: MailMessage[];
  latest: MailMessage;
  unread: boolean;
  flagged: boolean;
  hasAttachments: boolean;
}

/** One row per conversation, in the order of its newest message. */
export function groupThreads(messages: MailMessage[]): Thread[] {
  const byId = new Map<string, Thread>();
  const out: Thread[] = [];
  for (const m of messages) {
    // Two accounts of the unified inbox may hold the same conversation: one row each.
    const key = `${m.account}:${m.threadId}`;
    let t = byId.get(key);
    if (!t) {
      t = { id: key, messages: [], latest: m, unread: false, flagged: false, hasAttachments: false };
      byId.set(key, t);
      out.push(t);
    }
    t.messages.push(m);
    t.unread ||= !m.seen;
    t.flagged ||= m.flagged;
    t.hasAttachments ||= m.hasAttachments;
  }
  return out;
}

export function useMessage(account: number, id: string | null) {
  const api = useApi();
  return useQuery({
    queryKey: [...keys.mail(account), 'message', id],
    enabled: id !== null,
    queryFn: () => api.call('mail.get', { account, id: id! }),
    staleTime: Infinity,
    retry: false,
  });
}

/** Every message of a conversation, in any folder. */
export async function threadMessages(api: ReturnType<typeof useApi>, account: number, threadId: string): Promise<MailMessage[]> {
  return (await api.call('mail.list', { account, threadId, pageSize: MAIL_PAGE, ...ALL_DATES })).objects;
}

/** The reading pane's conversation view. */
export function useThread(account: number, threadId: string) {
  const api = useApi();
  return useQuery({ queryKey: [...keys.mail(account), 'thread', threadId], queryFn: () => threadMessages(api, account, threadId), retry: false });
}

/** A draft (flag \\Draft), which a conversation shows only in Drafts itself. */
export const isDraft = (m: MailMessage) => Array.isArray(m.raw.flags) && m.raw.flags.includes('\\Draft');

/** Address suggestions from the cache, for the last recipient being typed. */
export function useContacts(account: number, prefix: string) {
  const api = useApi();
  const p = prefix.trim();
  return useQuery({
    queryKey: [...keys.mail(account), 'contacts', p],
    enabled: p.length >= 1,
    queryFn: () => api.call('mail.contacts', { account, prefix: p, limit: 8 }),
    staleTime: 60_000,
  });
}

/** Follow the open folder with IDLE (the inbox is always followed). */
export function useOpenFolder(account: number, folderId: string | null) {
  const api = useApi();
  useEffect(() => {
    void api.call('mail.open', { account, folderId }).catch(() => {});
  }, [api, account, folderId]);
}

export function formatPerson(p: MailPerson | null | undefined): string {
  if (!p) return '';
  return p.name ? `${p.name} <${p.email}>` : p.email;
}

export function shortPerson(p: MailPerson | null | undefined): string {
  if (!p) return '(unknown sender)';
  return p.name || p.email;
}

/** "Ann <a@x>, b@y" → people; throws on an entry that has no address. */
export function parseRecipients(text: string): MailPerson[] {
  const out: MailPerson[] = [];
  // Split on commas/semicolons outside quotes and angle brackets.
  const parts: string[] = [];
  let cur = '';
  let quote = false;
  let angle = false;
  for (const ch of text) {
    if (ch === '"') quote = !quote;
    if (ch === '<') angle = true;
    if (ch === '>') angle = false;
    if ((ch === ',' || ch === ';') && !quote && !angle) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  for (const raw of parts) {
    const part = raw.trim();
    if (!part) continue;
    const m = /^(.*)<\s*([^>\s]+@[^>\s]+)\s*>$/.exec(part);
    if (m) {
      const name = m[1].trim().replace(/^"|"$/g, '').trim();
      out.push({ name: name || null, email: m[2] });
    } else if (/^[^\s@<>]+@[^\s@<>]+$/.test(part)) out.push({ name: null, email: part });
    else throw new Error(`“${part}” is not an e-mail address.`);
  }
  return out;
}

export function folderOrder(f: MailFolder): number {
  const order = ['inbox', 'drafts', 'sent', 'archive', 'flagged', 'all', 'junk', 'trash'];
  return f.specialUse ? order.indexOf(f.specialUse) : order.length;
}

/** A plain-text message: the server wraps its text in a lone <pre> as `htmlBody`. */
export function isWrappedText(m: Pick<MailMessage, 'textBody' | 'htmlBody'>): boolean {
  if (m.textBody === null || m.htmlBody === null) return m.htmlBody === null;
  const h = m.htmlBody;
  return h.startsWith('<pre>') && h.endsWith('</pre>') && !/<[a-z!/]/i.test(h.slice(5, -6));
}
