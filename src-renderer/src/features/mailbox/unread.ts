/**
 * Unread mail across accounts: each mail account's inbox count (the sidebar's badges), their sum
 * in the window title, and the unified inbox (every mail account's inbox in one list).
 */
import { useEffect, useMemo } from 'react';
import { useQueries } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import { ALL_DATES } from '../../../../src-main/contract/limits';
import type { MailFolder, MailMessage } from '../../../../src-main/contract/mail';
import { keys, useAccounts, useApi, useConnectors } from '../../api/hooks';
import { MAIL_PAGE } from './mailQueries';


/** The active mail accounts. */
export function useMailAccounts(): Account[] {
  const accounts = useAccounts();
  const connectors = useConnectors();
  return useMemo(() => {
    const mail = new Set((connectors.data ?? []).filter((c) => c.kind === 'mail').map((c) => c.id));
    return (accounts.data ?? []).filter((a) => a.active && mail.has(a.service));
  }, [accounts.data, connectors.data]);
}

/** Each mail account's inbox (the folders query the mailbox shares), by account id. */
export function useInboxes(accounts: Account[]): Map<number, MailFolder> {
  const api = useApi();
  const results = useQueries({
    queries: accounts.map((a) => ({ queryKey: [...keys.mail(a.id), 'folders'], queryFn: () => api.call('mail.folders', { account: a.id }), retry: false })),
  });
  const map = new Map<number, MailFolder>();
  results.forEach((r, i) => {
    const inbox = r.data?.find((f) => f.specialUse === 'inbox');
    if (inbox) map.set(accounts[i]!.id, inbox);
  });
  return map;
}

/** Unread messages in the inboxes of every mail account: per account, and in total. */
export function useInboxUnread(): { byAccount: Map<number, number>; total: number } {
  const inboxes = useInboxes(useMailAccounts());
  const byAccount = new Map([...inboxes].map(([id, f]) => [id, f.unread]));
  return { byAccount, total: [...byAccount.values()].reduce((a, b) => a + b, 0) };
}

/** The window title carries the number of unread messages in the inboxes: "(3) Tributary". */
export function useUnreadTitle(): void {
  const { total } = useInboxUnread();
  useEffect(() => {
    document.title = total > 0 ? `(${total}) Tributary` : 'Tributary';
  }, [total]);
}

/** The unified inbox: the newest page of every mail account's inbox, merged newest first. */
export function useUnifiedInbox(enabled: boolean): { messages: MailMessage[]; loading: boolean; error: string | null; unread: number } {
  const api = useApi();
  const accounts = useMailAccounts();
  const inboxes = useInboxes(accounts);
  const list = accounts.filter((a) => inboxes.has(a.id));
  const results = useQueries({
    queries: list.map((a) => {
      const inbox = inboxes.get(a.id)!;
      return {
        queryKey: [...keys.mail(a.id), 'list', 'unified', inbox.id],
        enabled,
        retry: false,
        queryFn: async () => (await api.call('mail.list', { account: a.id, folderId: inbox.id, pageSize: MAIL_PAGE, ...ALL_DATES })).objects,
      };
    }),
  });
  const messages = useMemo(
    () =>
      results
        .flatMap((r) => r.data ?? [])
        .sort((a, b) => Date.parse(b.created) - Date.parse(a.created)),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [results.map((r) => r.dataUpdatedAt).join()],
  );
  const unread = [...inboxes.values()].reduce((n, f) => n + f.unread, 0);
  return { unread, messages, loading: enabled && (results.length === 0 ? accounts.length > 0 : results.some((r) => r.isLoading)), error: results.find((r) => r.error)?.error?.message ?? null };
}
