/**
 * The mailbox of a mail account: folder tree with unread counts, a virtualized list of
 * conversations (newest first, pages fetched as the list nears its end), the reading pane
 * and the compose window; the keyboard shortcuts. New mail appears live: `mail.changed` events
 * refetch the lists.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { MailFolder, MailMessage } from '../../../../src-main/contract/mail';
import { keys, useApi } from '../../api/hooks';
import { PenIcon } from '../../components/Icons';
import { toastError, useUi } from '../../stores/ui';
import { Compose, type ComposeInit } from './Compose';
import { FolderTree } from './FolderTree';
import { OutboxEntry } from './Outbox';
import { folderOrder, groupThreads, useMailFolders, useMailLabels, useMessages, useOpenFolder } from './mailQueries';
import { Reader } from './Reader';
import { ThreadList } from './ThreadList';
import './mailbox.css';

export function Mailbox({ account }: { account: Account }) {
  const api = useApi();
  const qc = useQueryClient();
  const folders = useMailFolders(account.id);
  const [folderId, setFolderId] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [label, setLabel] = useState<string | null>(null);
  const labels = useMailLabels(account.id);
  const [searchInput, setSearchInput] = useState('');
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [compose, setCompose] = useState<ComposeInit | null>(null);
  const searchRef = useRef<HTMLInputElement>(null);
  const listRef = useRef<HTMLDivElement>(null);

  const sorted = useMemo(() => (folders.data ?? []).slice().sort((a, b) => folderOrder(a) - folderOrder(b) || a.name.localeCompare(b.name)), [folders.data]);
  // Open the inbox first.
  useEffect(() => {
    if (folderId === null && sorted.length) setFolderId((sorted.find((f) => f.specialUse === 'inbox') ?? sorted[0]).id);
  }, [sorted, folderId]);
  useOpenFolder(account.id, folderId);

  const { messages, query } = useMessages(account.id, folderId, search, label);
  const threads = useMemo(() => groupThreads(messages), [messages]);
  const index = threads.findIndex((t) => t.messages.some((m) => m.id === selectedId));
  const selectedThread = index >= 0 ? threads[index] : null;
  const folder = sorted.find((f) => f.id === folderId) ?? null;
  const archive = sorted.find((f) => f.specialUse === 'archive') ?? null;
  const own = String(account.settings.email ?? account.settings.user ?? '').toLowerCase();

  const refreshLists = () => qc.invalidateQueries({ queryKey: keys.mail(account.id), predicate: (q) => q.queryKey[2] !== 'message' });

  const act = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      toastError(what, e);
    }
    await refreshLists();
  };
  const setFlags = (m: MailMessage, flags: { seen?: boolean; flagged?: boolean }) =>
    act('Could not change the message', async () => {
      const updated = await api.call('mail.setFlags', { account: account.id, id: m.id, ...flags });
      qc.setQueryData([...keys.mail(account.id), 'message', m.id], updated);
    });
  const selectAfterRemoval = () => {
    const next = threads[index + 1] ?? threads[index - 1];
    setSelectedId(next ? next.latest.id : null);
  };
  const move = (m: MailMessage, to: MailFolder) => {
    selectAfterRemoval();
    void act(`Could not move the message to ${to.leaf}`, () => api.call('mail.move', { account: account.id, id: m.id, folderId: to.id }));
  };
  const remove = (m: MailMessage) => {
    selectAfterRemoval();
    void act('Could not delete the message', () => api.call('mail.delete', { account: account.id, id: m.id }));
  };

  const openCompose = (init: ComposeInit) => setCompose(init);
  const current = selectedThread?.messages.find((m) => m.id === selectedId) ?? null;

  // Keyboard shortcuts, as in most mail clients; not while typing or while a dialog is open.
  const handlers = useRef<(e: KeyboardEvent) => void>(() => {});
  handlers.current = (e: KeyboardEvent) => {
    const t = e.target as HTMLElement | null;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.closest('input, textarea, select, [contenteditable=true], dialog') || t.isContentEditable)) return;
    if (document.querySelector('dialog[open]')) return;
    const go = (i: number) => {
      const th = threads[Math.max(0, Math.min(threads.length - 1, i))];
      if (th) setSelectedId(th.latest.id);
    };
    const key = e.key;
    const handled = () => e.preventDefault();
    if (key === 'j') return handled(), go(index < 0 ? 0 : index + 1);
    if (key === 'k') return handled(), go(index < 0 ? 0 : index - 1);
    if (key === 'c') return handled(), openCompose({ mode: 'new' });
    if (key === '/') return handled(), searchRef.current?.focus();
    if (!current) return;
    if (key === 'r') return handled(), openCompose({ mode: 'reply', original: current });
    if (key === 'a') return handled(), openCompose({ mode: 'replyAll', original: current });
    if (key === 'f') return handled(), openCompose({ mode: 'forward', original: current });
    if (key === 'u') return handled(), void setFlags(current, { seen: !current.seen });
    if (key === 's') return handled(), void setFlags(current, { flagged: !current.flagged });
    if (key === '#') return handled(), remove(current);
    if (key === 'e') {
      handled();
      if (archive && archive.id !== current.folderId) move(current, archive);
      else useUi.getState().toast({ kind: 'info', title: 'No Archive folder', message: 'This account has no Archive folder; use Move to… instead.' });
    }
  };
  useEffect(() => {
    const h = (e: KeyboardEvent) => handlers.current(e);
    window.addEventListener('keydown', h);
    return () => window.removeEventListener('keydown', h);
  }, []);

  return (
    <section className="mailbox" aria-label="Mailbox" data-testid="mailbox">
      <div className="toolbar">
        <form
          className="mail-search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(searchInput);
            setSelectedId(null);
          }}
        >
          <input
            ref={searchRef}
            className="input"
            type="search"
            placeholder="Search mail  ( / )"
            aria-label="Search mail"
            value={searchInput}
            onChange={(e) => {
              setSearchInput(e.target.value);
              if (!e.target.value) setSearch('');
            }}
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                setSearchInput('');
                setSearch('');
                e.currentTarget.blur();
              }
            }}
            data-testid="mail-search"
          />
        </form>
        <div className="toolbar-actions">
          <button type="button" className="btn" onClick={() => void act('Could not sync', () => api.call('mail.sync', { account: account.id, folderId: folderId ?? undefined }))} data-testid="mail-sync">
            Refresh
          </button>
          <button type="button" className="btn btn-primary" onClick={() => openCompose({ mode: 'new' })} data-testid="compose">
            <PenIcon /> Compose
          </button>
        </div>
      </div>
      <div className="mail-panes">
        <FolderTree
          folders={sorted}
          labels={labels.data?.map((l) => l.name) ?? []}
          loading={folders.isLoading}
          error={folders.error?.message ?? null}
          current={search || label ? null : folderId}
          currentLabel={search ? null : label}
          onOpen={(id) => {
            setFolderId(id);
            setLabel(null);
            setSearch('');
            setSearchInput('');
            setSelectedId(null);
          }}
          onOpenLabel={(name) => {
            setLabel(name);
            setSearch('');
            setSearchInput('');
            setSelectedId(null);
          }}
          footer={<OutboxEntry account={account.id} />}
        />
        <ThreadList
          threads={threads}
          loading={query.isLoading}
          error={query.error?.message ?? null}
          title={search ? `Results for “${search}”` : label ? `Label: ${label}` : folder?.specialUse === 'inbox' ? 'Inbox' : (folder?.leaf ?? '')}
          selectedThread={selectedThread?.id ?? null}
          hasMore={!!query.hasNextPage}
          fetchingMore={query.isFetchingNextPage}
          fetchMore={() => void query.fetchNextPage()}
          onSelect={(t) => setSelectedId(t.latest.id)}
          listRef={listRef}
          own={own}
          recipientsFirst={!search && !label && (folder?.specialUse === 'sent' || folder?.specialUse === 'drafts')}
        />
        <div className="mail-reader-pane">
          {current ? (
            <Reader
              key={current.id}
              account={account}
              summary={current}
              thread={selectedThread!}
              folders={sorted}
              onSelect={setSelectedId}
              onReply={(m, mode) => openCompose({ mode, original: m })}
              onFlags={(m, f) => void setFlags(m, f)}
              onMove={move}
              onDelete={remove}
            />
          ) : (
            <div className="placeholder">{threads.length ? 'Select a message to read it.' : ''}</div>
          )}
        </div>
      </div>
      {compose && <Compose key={JSON.stringify([compose.mode, compose.original?.id])} account={account} init={compose} onClose={() => setCompose(null)} onSent={() => void refreshLists()} />}
    </section>
  );
}
