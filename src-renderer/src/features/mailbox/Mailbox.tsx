/**
 * The mailbox of a mail account: folder tree with unread counts (and, with several mail
 * accounts, the unified inbox of all of them), a virtualized list of conversations (newest
 * first, pages fetched as the list nears its end), the reading pane and the compose window
 * (which a message of Drafts reopens); the keyboard shortcuts. New mail appears live:
 * `mail.changed` events refetch the lists.
 */
import { useEffect, useMemo, useRef, useState, type CSSProperties } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { MailFolder, MailMessage } from '../../../../src-main/contract/mail';
import { keys, useApi } from '../../api/hooks';
import { PenIcon, SmallFolderIcon } from '../../components/Icons';
import { PaneSplitter } from '../../components/PaneSplitter';
import { usePanes } from '../../stores/panes';
import { toastError, useUi } from '../../stores/ui';
import { Compose, type ComposeInit } from './Compose';
import { FolderTree } from './FolderTree';
import { OutboxEntry } from './Outbox';
import { folderOrder, groupThreads, useMailFolders, useMailLabels, useMessages, useOpenFolder } from './mailQueries';
import { Reader } from './Reader';
import { useMailAccounts, useUnifiedInbox } from './unread';
import { ThreadList } from './ThreadList';
import './mailbox.css';

export function Mailbox({ account }: { account: Account }) {
  const api = useApi();
  const qc = useQueryClient();
  const folders = useMailFolders(account.id);
  const [search, setSearch] = useState('');
  const [label, setLabel] = useState<string | null>(null);
  const labels = useMailLabels(account.id);
  const [searchInput, setSearchInput] = useState('');
  const [compose, setCompose] = useState<{ init: ComposeInit; account: Account } | null>(null);
  const [unified, setUnified] = useState(false);
  const mailAccounts = useMailAccounts();
  /** A message's own account: in the unified inbox it may be another than this mailbox's. */
  const accountOf = (m: MailMessage) => mailAccounts.find((a) => a.id === m.account) ?? account;
  const searchRef = useRef<HTMLInputElement>(null);
  const paneWidth = usePanes((s) => s.width);
  const foldersHidden = usePanes((s) => s.collapsed.mailFolders);
  const listRef = useRef<HTMLDivElement>(null);

  const sorted = useMemo(() => (folders.data ?? []).slice().sort((a, b) => folderOrder(a) - folderOrder(b) || a.name.localeCompare(b.name)), [folders.data]);
  // The open folder and message are the place in the address (deep links, Back/Forward), kept
  // in one store only: a copy here could write an old selection over a place Forward just took.
  const placeFolder = useUi((s) => (s.folder === 'root' ? null : s.folder));
  const selectedId = useUi((s) => s.message);
  const inboxId = (sorted.find((f) => f.specialUse === 'inbox') ?? sorted[0])?.id ?? null;
  const folderId = placeFolder ?? inboxId;
  // A mailbox opens on its inbox: that becomes the place, with no new history entry.
  useEffect(() => {
    if (!placeFolder && inboxId) useUi.getState().showMail(inboxId, useUi.getState().message);
  }, [placeFolder, inboxId]);
  useOpenFolder(account.id, folderId);
  const selectMessage = (id: string | null) => {
    if (folderId) useUi.getState().showMail(folderId, id);
  };

  const { messages: folderMessages, query } = useMessages(account.id, unified ? null : folderId, unified ? '' : search, unified ? null : label);
  const all = useUnifiedInbox(unified);
  const messages = unified ? all.messages : folderMessages;
  const threads = useMemo(() => groupThreads(messages), [messages]);
  const index = threads.findIndex((t) => t.messages.some((m) => m.id === selectedId));
  const selectedThread = index >= 0 ? threads[index] : null;
  const folder = sorted.find((f) => f.id === folderId) ?? null;
  const archive = sorted.find((f) => f.specialUse === 'archive') ?? null;
  const own = String(account.settings.email ?? account.settings.user ?? '').toLowerCase();

  const refreshLists = (other?: number) =>
    Promise.all([...new Set([account.id, other ?? account.id])].map((id) => qc.invalidateQueries({ queryKey: keys.mail(id), predicate: (q) => q.queryKey[2] !== 'message' })));

  const act = async (what: string, fn: () => Promise<unknown>, other?: number) => {
    try {
      await fn();
    } catch (e) {
      toastError(what, e);
    }
    await refreshLists(other);
  };
  const setFlags = (m: MailMessage, flags: { seen?: boolean; flagged?: boolean }) =>
    act(
      'Could not change the message',
      async () => {
        const updated = await api.call('mail.setFlags', { account: m.account, id: m.id, ...flags });
        qc.setQueryData([...keys.mail(m.account), 'message', m.id], updated);
      },
      m.account,
    );
  const selectAfterRemoval = () => {
    const next = threads[index + 1] ?? threads[index - 1];
    selectMessage(next ? next.latest.id : null);
  };
  const move = (m: MailMessage, to: MailFolder) => {
    selectAfterRemoval();
    void act(`Could not move the message to ${to.leaf}`, () => api.call('mail.move', { account: m.account, id: m.id, folderId: to.id }), m.account);
  };
  const remove = (m: MailMessage) => {
    selectAfterRemoval();
    void act('Could not delete the message', () => api.call('mail.delete', { account: m.account, id: m.id }), m.account);
  };

  const openCompose = (init: ComposeInit) => setCompose({ init, account: init.original ? accountOf(init.original) : account });
  const inDrafts = !unified && !search && !label && folder?.specialUse === 'drafts';
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
      if (th) selectMessage(th.latest.id);
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
      if (archive && archive.id !== current.folderId && current.account === account.id) move(current, archive);
      else useUi.getState().toast({ kind: 'info', title: 'No Archive folder', message: 'This account has no Archive folder; use Move to… instead.' });
    }
  };
  useEffect(() => {
    const h = (e: KeyboardEvent) => handlers.current(e);
    window.addEventListener('keydown', h);
    return () => window.removeEventListener('keydown', h);
  }, []);

  return (
    // Narrow windows show the list or the message, not both ("reading"; mailbox.css).
    <section className={`mailbox${current ? ' reading' : ''}`} aria-label="Mailbox" data-testid="mailbox">
      <div className="toolbar">
        <button
          type="button"
          className={`btn btn-ghost${foldersHidden ? '' : ' pressed'}`}
          aria-label={foldersHidden ? 'Show the folder pane' : 'Hide the folder pane'}
          title={foldersHidden ? 'Show the folder pane' : 'Hide the folder pane'}
          aria-expanded={!foldersHidden}
          aria-controls="mail-folders"
          onClick={() => usePanes.getState().collapse('mailFolders', !foldersHidden)}
          data-testid="mail-folders-toggle"
        >
          <SmallFolderIcon />
        </button>
        <form
          className="mail-search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(searchInput);
            selectMessage(null);
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
      {/* The widths go in as variables: narrow windows lay the panes out by their own rules (mailbox.css). */}
      <div className="mail-panes" style={{ '--mail-folders-width': `${paneWidth.mailFolders}px`, '--mail-list-width': `${paneWidth.mailList}px` } as CSSProperties}>
        {!foldersHidden && (
          <>
            <FolderTree
              folders={sorted}
              labels={labels.data?.map((l) => l.name) ?? []}
              loading={folders.isLoading}
              error={folders.error?.message ?? null}
              current={search || label || unified ? null : folderId}
              currentLabel={search || unified ? null : label}
              unified={mailAccounts.length > 1 ? { active: unified, unread: all.unread } : null}
              onOpenUnified={() => {
                setUnified(true);
                setLabel(null);
                setSearch('');
                setSearchInput('');
                selectMessage(null);
              }}
              onOpen={(id) => {
                setUnified(false);
                useUi.getState().showMail(id, null);
                setLabel(null);
                setSearch('');
                setSearchInput('');
              }}
              onOpenLabel={(name) => {
                setUnified(false);
                setLabel(name);
                setSearch('');
                setSearchInput('');
                selectMessage(null);
              }}
              footer={<OutboxEntry account={account.id} />}
            />
            <PaneSplitter pane="mailFolders" label="Resize the folder pane" controls="mail-folders" className="mail-splitter" testId="mail-folders-splitter" />
          </>
        )}
        <ThreadList
          threads={threads}
          loading={unified ? all.loading : query.isLoading}
          error={unified ? all.error : (query.error?.message ?? null)}
          title={unified ? 'All inboxes' : search ? `Results for “${search}”` : label ? `Label: ${label}` : folder?.specialUse === 'inbox' ? 'Inbox' : (folder?.leaf ?? '')}
          selectedThread={selectedThread?.id ?? null}
          hasMore={!unified && !!query.hasNextPage}
          fetchingMore={!unified && query.isFetchingNextPage}
          fetchMore={() => void query.fetchNextPage()}
          // A message of Drafts opens where it was written: in the compose window.
          onSelect={(t) => (inDrafts ? openCompose({ mode: 'draft', original: t.latest }) : selectMessage(t.latest.id))}
          accountNames={unified ? new Map(mailAccounts.map((a) => [a.id, a.account])) : null}
          listRef={listRef}
          own={own}
          recipientsFirst={!search && !label && (folder?.specialUse === 'sent' || folder?.specialUse === 'drafts')}
        />
        <PaneSplitter pane="mailList" label="Resize the message list" controls="mail-list-pane" className="mail-splitter" testId="mail-list-splitter" />
        <div className="mail-reader-pane">
          {current ? (
            <Reader
              key={current.id}
              account={accountOf(current)}
              summary={current}
              thread={selectedThread!}
              // Moving stays within the message's own account.
              folders={current.account === account.id ? sorted : []}
              onSelect={selectMessage}
              onBack={() => selectMessage(null)}
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
      {compose && (
        <Compose
          key={JSON.stringify([compose.init.mode, compose.init.original?.id])}
          account={compose.account}
          init={compose.init}
          onClose={() => setCompose(null)}
          onSent={() => void refreshLists(compose.account.id)}
        />
      )}
    </section>
  );
}
