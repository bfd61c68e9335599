/**
 * Server data through React Query, kept fresh by pushed events rather than polling:
 * files.changed invalidates that folder, accounts.changed the account list (and quotas),
 * transfers.updated patches the transfers list in place. The open folder is kept live by the
 * main process (`files.watch`), which sends files.changed when it changes outside Tributary.
 */
import { createContext, useContext, useEffect, useMemo } from 'react';
import { useInfiniteQuery, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import type { Account, EventPayload, FolderPage, Resource, Transfer } from '../../../src-main/contract';
import type { Api } from './client';

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error('ApiContext missing');
  return api;
}

export const keys = {
  accounts: ['accounts'] as const,
  connectors: ['connectors'] as const,
  quota: (id: number) => ['quota', id] as const,
  folder: (account: number, folder: string) => ['folder', account, folder] as const,
  transfers: ['transfers'] as const,
  /** Under ['settings'], which Settings invalidates after each change. */
  settings: ['settings', 'values'] as const,
  info: ['info'] as const,
  mail: (account: number) => ['mail', account] as const,
  activity: (account: number) => ['activity', account] as const,
  activityGlobal: ['activity-global'] as const,
};

/**
 * The first page is small so that it paints at once; the rest comes in large pages (the
 * listing is re-read from the start at the large size, which keeps page numbers aligned):
 * 50,000 entries take 1 + 5 round trips instead of 50.
 */
export const FIRST_PAGE = 1000;
export const BULK_PAGE = 10000;

export function useAccounts() {
  const api = useApi();
  return useQuery({ queryKey: keys.accounts, queryFn: () => api.call('accounts.list', {}) });
}

export function useConnectors() {
  const api = useApi();
  return useQuery({ queryKey: keys.connectors, queryFn: () => api.call('connectors.list', {}), staleTime: Infinity });
}

/** The active accounts of storage services (what files can be moved to or synced with). */
export function useStorageAccounts(): Account[] {
  const accounts = useAccounts();
  const connectors = useConnectors();
  return (accounts.data ?? []).filter((a) => a.active && connectors.data?.find((c) => c.id === a.service)?.kind === 'storage');
}

export function useQuota(account: Account) {
  const api = useApi();
  return useQuery({
    queryKey: keys.quota(account.id),
    queryFn: () => api.call('accounts.quota', { id: account.id }),
    enabled: account.active,
    staleTime: 60_000,
    retry: false,
  });
}

export function useAppInfo() {
  const api = useApi();
  return useQuery({ queryKey: keys.info, queryFn: () => api.call('app.info', {}), staleTime: Infinity });
}

/**
 * A folder's full listing, fetched page by page: the first page paints at once, the rest
 * follow in the background until `hasNext` is false.
 */
export function useFolder(account: number | null, folder: string) {
  const api = useApi();
  useWatchFolder(account, folder);
  const query = useInfiniteQuery({
    queryKey: keys.folder(account ?? 0, folder),
    enabled: account !== null,
    initialPageParam: { page: 1, size: FIRST_PAGE },
    queryFn: ({ pageParam }) => api.call('files.list', { account: account!, folder, page: pageParam.page, pageSize: pageParam.size }),
    getNextPageParam: (last: FolderPage, all: FolderPage[]) => {
      if (!last.hasNext) return undefined;
      if (all.length === 1 && last.pageSize < BULK_PAGE) return { page: 1, size: BULK_PAGE };
      return { page: last.page + 1, size: last.pageSize };
    },
    retry: false,
  });
  const { hasNextPage, isFetchingNextPage, fetchNextPage, isError } = query;
  useEffect(() => {
    if (hasNextPage && !isFetchingNextPage && !isError) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, isError, fetchNextPage]);
  // What the cache last saw paints at once (also after a restart) until the live listing arrives.
  const cached = useQuery({
    queryKey: [...keys.folder(account ?? 0, folder), 'cached'],
    enabled: account !== null,
    queryFn: () => api.call('files.listCached', { account: account!, folder }),
    staleTime: Infinity,
    retry: false,
  });
  const pages = query.data?.pages;
  const fallback = pages ? undefined : (cached.data ?? undefined);
  // The small first page is superseded by the large ones as soon as they arrive.
  const items: Resource[] = useMemo(
    () => (!pages ? (fallback?.items ?? []) : pages.length === 1 ? pages[0].items : pages.slice(1).flatMap((p) => p.items)),
    [pages, fallback],
  );
  return {
    folder: pages?.[0]?.folder ?? fallback?.folder ?? null,
    items,
    total: pages?.[0]?.total ?? fallback?.total ?? 0,
    complete: !!pages && !hasNextPage,
    isLoading: query.isLoading && !fallback,
    error: query.error,
    refetch: query.refetch,
  };
}

/** Renews the main process's lease on the open folder (contract `files.watch`, 30 s) while it is shown. */
const WATCH_RENEW_MS = 10_000;

function useWatchFolder(account: number | null, folder: string): void {
  const api = useApi();
  useEffect(() => {
    if (account === null) return;
    // Not being live is no error the user can act on: the Refresh button still works.
    const renew = () => void api.call('files.watch', { account, folder }).catch(() => {});
    renew();
    const timer = setInterval(renew, WATCH_RENEW_MS);
    // After a reconnect the lease may have lapsed.
    const off = api.transport.onReconnect(renew);
    return () => {
      clearInterval(timer);
      off();
    };
  }, [api, account, folder]);
}

export function useSettings() {
  const api = useApi();
  return useQuery({ queryKey: keys.settings, queryFn: () => api.call('settings.get', {}) });
}

export function useTransfers() {
  const api = useApi();
  return useQuery({ queryKey: keys.transfers, queryFn: () => api.call('transfers.list', {}) });
}

function applyTransfer(qc: QueryClient, t: Transfer): void {
  qc.setQueryData<Transfer[]>(keys.transfers, (old) => {
    const list = old ?? [];
    const i = list.findIndex((x) => x.id === t.id);
    if (i === -1) return [...list, t];
    const next = list.slice();
    next[i] = t;
    return next;
  });
}

/** Wires pushed events to the query cache; mounted once at the root. */
export function useServerEvents(): void {
  const api = useApi();
  const qc = useQueryClient();
  useEffect(() => {
    const off = api.transport.subscribe((name, payload) => {
      if (name === 'files.changed') {
        const p = payload as EventPayload<'files.changed'>;
        void qc.invalidateQueries({ queryKey: keys.folder(p.account, p.folder) });
        void qc.invalidateQueries({ queryKey: keys.quota(p.account) });
      } else if (name === 'accounts.changed') {
        void qc.invalidateQueries({ queryKey: keys.accounts });
        void qc.invalidateQueries({ queryKey: ['quota'] });
      } else if (name === 'transfers.updated') {
        applyTransfer(qc, payload as Transfer);
      } else if (name === 'mail.changed') {
        // Folder counts and message lists of that account; the open message keeps its body.
        const p = payload as EventPayload<'mail.changed'>;
        void qc.invalidateQueries({ queryKey: keys.mail(p.account), predicate: (q) => q.queryKey[2] !== 'message' });
      } else if (name === 'mail.messages') {
        const p = payload as EventPayload<'mail.messages'>;
        for (const id of p.updated) void qc.invalidateQueries({ queryKey: [...keys.mail(p.account), 'message', id] });
      } else if (name === 'mail.outboxChanged') {
        const p = payload as EventPayload<'mail.outboxChanged'>;
        void qc.invalidateQueries({ queryKey: [...keys.mail(p.account), 'outbox'] });
      } else if (name === 'activity.appended' || name === 'activity.subscriptionsChanged') {
        const p = payload as { account: number };
        void qc.invalidateQueries({ queryKey: keys.activity(p.account) });
      } else if (name === 'sync.changed') {
        void qc.invalidateQueries({ queryKey: ['sync'] });
      } else if (name === 'activity.followersChanged') {
        qc.setQueryData([...keys.activityGlobal, 'followers'], (payload as EventPayload<'activity.followersChanged'>).followers);
      }
    });
    // Events sent while the socket was down are lost: refresh everything instead.
    const offReconnect = api.transport.onReconnect(() => void qc.invalidateQueries());
    return () => {
      off();
      offReconnect();
    };
  }, [api, qc]);
}
