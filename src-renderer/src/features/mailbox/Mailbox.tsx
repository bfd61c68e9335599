/**
 * The mailbox of a mail account: folder tree with unread counts, a virtualized list of
 * conversations (newest first, pages fetched as the list nears its end), the reading pane
 * and the compose window. New mail appears live: `mail.changed` events refetch the lists.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { MailFolder, MailMessage } from '../../../../src-main/contract/mail';
import { keys, useApi } from '../../api/hooks';
import { formatDate } from '../../components/format';
import { ArchiveIcon, DraftIcon, FlagIcon, InboxIcon, JunkIcon, PaperclipIcon, PenIcon, SendIcon, SmallFolderIcon, SmallTrashIcon } from '../../components/Icons';
import { toastError, useUi } from '../../stores/ui';
import { Compose, type ComposeInit } from './Compose';
import { folderOrder, groupThreads, shortPerson, useMailFolders, useMailLabels, useMessages, useOpenFolder, type Thread } from './mailQueries';
import { Reader } from './Reader';

const ROW_HEIGHT = 64;

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

function FolderTree(props: {
  folders: MailFolder[];
  labels: string[];
  loading: boolean;
  error: string | null;
  current: string | null;
  currentLabel: string | null;
  onOpen(id: string): void;
  onOpenLabel(name: string): void;
}) {
  // Nest by the server's delimiter; special folders first, the rest by name.
  const rows = useMemo(() => {
    const depth = (f: MailFolder) => (f.delimiter ? f.name.split(f.delimiter).length - 1 : 0);
    const special = props.folders.filter((f) => f.specialUse);
    const other = props.folders.filter((f) => !f.specialUse).sort((a, b) => a.name.localeCompare(b.name));
    return [...special.map((f) => ({ f, depth: 0 })), ...other.map((f) => ({ f, depth: depth(f) }))];
  }, [props.folders]);
  return (
    <nav className="mail-folders" aria-label="Folders" data-testid="mail-folders">
      {props.loading && <div className="sidebar-note">Loading folders…</div>}
      {props.error && (
        <div className="sidebar-note error" role="alert">
          {props.error}
        </div>
      )}
      <ul>
        {rows.map(({ f, depth }) => (
          <li key={f.id}>
            <button
              type="button"
              className={`mail-folder${props.current === f.id ? ' active' : ''}${f.unread ? ' has-unread' : ''}`}
              style={{ paddingLeft: 10 + depth * 14 }}
              aria-current={props.current === f.id ? 'true' : undefined}
              onClick={() => props.onOpen(f.id)}
              data-testid="mail-folder"
              data-name={f.name}
              data-special={f.specialUse ?? ''}
            >
              <span className="mail-folder-icon" aria-hidden="true">
                {folderIcon(f.specialUse)}
              </span>
              <span className="mail-folder-name">{f.specialUse === 'inbox' ? 'Inbox' : f.leaf}</span>
              {f.unread > 0 && (
                <span className="mail-unread" data-testid="mail-folder-unread" aria-label={`${f.unread} unread`}>
                  {f.unread}
                </span>
              )}
            </button>
          </li>
        ))}
      </ul>
      {props.labels.length > 0 && (
        <>
          <div className="mail-folders-title">Labels</div>
          <ul>
            {props.labels.map((name) => (
              <li key={name}>
                <button
                  type="button"
                  className={`mail-folder${props.currentLabel === name ? ' active' : ''}`}
                  aria-current={props.currentLabel === name ? 'true' : undefined}
                  onClick={() => props.onOpenLabel(name)}
                  data-testid="mail-label"
                  data-name={name}
                >
                  <span className="mail-folder-icon label-dot" aria-hidden="true" />
                  <span className="mail-folder-name">{name}</span>
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
    </nav>
  );
}

function folderIcon(use: MailFolder['specialUse']) {
  switch (use) {
    case 'inbox':
      return <InboxIcon />;
    case 'sent':
      return <SendIcon />;
    case 'drafts':
      return <DraftIcon />;
    case 'trash':
      return <SmallTrashIcon />;
    case 'junk':
      return <JunkIcon />;
    case 'archive':
      return <ArchiveIcon />;
    case 'flagged':
      return <FlagIcon size={16} />;
    default:
      return <SmallFolderIcon />;
  }
}

function ThreadList(props: {
  threads: Thread[];
  loading: boolean;
  error: string | null;
  title: string;
  selectedThread: string | null;
  hasMore: boolean;
  fetchingMore: boolean;
  fetchMore(): void;
  onSelect(t: Thread): void;
  listRef: React.RefObject<HTMLDivElement | null>;
  own: string;
  /** Sent and Drafts show whom a message is to, as mail clients do. */
  recipientsFirst: boolean;
}) {
  const { threads } = props;
  const virtualizer = useVirtualizer({ count: threads.length, getScrollElement: () => props.listRef.current, estimateSize: () => ROW_HEIGHT, overscan: 10 });
  const items = virtualizer.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  // Progressive paging: the next page is asked for when the last rows come into view.
  useEffect(() => {
    if (props.hasMore && !props.fetchingMore && lastIndex >= threads.length - 20) props.fetchMore();
  }, [lastIndex, threads.length, props.hasMore, props.fetchingMore]);
  const selIndex = threads.findIndex((t) => t.id === props.selectedThread);
  useEffect(() => {
    if (selIndex >= 0) virtualizer.scrollToIndex(selIndex, { align: 'auto' });
  }, [selIndex, virtualizer]);

  return (
    <div className="mail-list-wrap">
      <div className="mail-list-title">{props.title}</div>
      <div ref={props.listRef} className="mail-list" role="listbox" aria-label="Messages" tabIndex={0} data-testid="mail-list" aria-busy={props.loading}>
        {props.loading ? (
          <div className="list-state">
            <span className="spinner" aria-hidden="true" /> Loading…
          </div>
        ) : props.error ? (
          <div className="list-state list-error" role="alert">
            {props.error}
          </div>
        ) : threads.length === 0 ? (
          <div className="list-state" data-testid="mail-empty">
            No messages
          </div>
        ) : (
          <div className="list-inner" style={{ height: virtualizer.getTotalSize() }}>
            {items.map((v) => {
              const t = threads[v.index];
              const m = t.latest;
              const fromMe = m.from?.email.toLowerCase() === props.own;
              const who = props.recipientsFirst && fromMe && m.to.length ? `To: ${shortPerson(m.to[0])}` : shortPerson(m.from);
              const selected = t.id === props.selectedThread;
              return (
                <div
                  key={t.id}
                  role="option"
                  aria-selected={selected}
                  className={`mail-row${selected ? ' selected' : ''}${t.unread ? ' unread' : ''}`}
                  style={{ transform: `translateY(${v.start}px)` }}
                  onClick={() => props.onSelect(t)}
                  data-testid="mail-row"
                  data-subject={m.subject}
                  data-unread={t.unread}
                  data-flagged={t.flagged}
                >
                  <div className="mail-row-line">
                    <span className="mail-row-from">
                      {who}
                      {t.messages.length > 1 && <span className="mail-count">{t.messages.length}</span>}
                    </span>
                    <span className="mail-row-date">{shortDate(m.created)}</span>
                  </div>
                  <div className="mail-row-line">
                    <span className="mail-row-subject">{m.subject || '(no subject)'}</span>
                    <span className="mail-row-icons">
                      {t.hasAttachments && (
                        <span className="mail-clip" title="Has attachments" aria-label="Has attachments" data-testid="mail-attachment-icon">
                          <PaperclipIcon />
                        </span>
                      )}
                      {t.flagged && (
                        <span className="mail-flag" title="Flagged" aria-label="Flagged">
                          <FlagIcon filled />
                        </span>
                      )}
                    </span>
                  </div>
                  {m.snippet && <div className="mail-row-snippet">{m.snippet}</div>}
                </div>
              );
            })}
          </div>
        )}
      </div>
      <div className="list-footer">
        {threads.length} conversation{threads.length === 1 ? '' : 's'}
        {props.fetchingMore ? ' · loading more…' : props.hasMore ? ' · more on scroll' : ''}
      </div>
    </div>
  );
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

function shortDate(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return timeFmt.format(d);
  if (d.getFullYear() === now.getFullYear()) return dayFmt.format(d);
  return formatDate(iso).split(',')[0];
}
