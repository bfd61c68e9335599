/** The folder tree of a mailbox (special folders first, nested by the server's delimiter, unread counts) and its labels. */
import { useMemo, type ReactNode } from 'react';
import type { MailFolder } from '../../../../src-main/contract/mail';
import { ArchiveIcon, DraftIcon, FlagIcon, InboxIcon, JunkIcon, SendIcon, SmallFolderIcon, SmallTrashIcon } from '../../components/Icons';
import './mailbox.css';

export function FolderTree(props: {
  folders: MailFolder[];
  labels: string[];
  loading: boolean;
  error: string | null;
  current: string | null;
  currentLabel: string | null;
  /** With several mail accounts: the unified inbox entry (every account's inbox). */
  unified?: { active: boolean; unread: number } | null;
  onOpenUnified?(): void;
  onOpen(id: string): void;
  onOpenLabel(name: string): void;
  /** Shown below the folders (the outbox entry). */
  footer?: ReactNode;
}) {
  // Nest by the server's delimiter; special folders first, the rest by name.
  const rows = useMemo(() => {
    const depth = (f: MailFolder) => (f.delimiter ? f.name.split(f.delimiter).length - 1 : 0);
    const special = props.folders.filter((f) => f.specialUse);
    const other = props.folders.filter((f) => !f.specialUse).sort((a, b) => a.name.localeCompare(b.name));
    return [...special.map((f) => ({ f, depth: 0 })), ...other.map((f) => ({ f, depth: depth(f) }))];
  }, [props.folders]);
  return (
    <nav id="mail-folders" className="mail-folders" aria-label="Folders" data-testid="mail-folders">
      {props.loading && <div className="sidebar-note">Loading folders…</div>}
      {props.error && (
        <div className="sidebar-note error" role="alert">
          {props.error}
        </div>
      )}
      {props.unified && (
        <ul>
          <li>
            <button
              type="button"
              className={`mail-folder${props.unified.active ? ' active' : ''}${props.unified.unread ? ' has-unread' : ''}`}
              aria-current={props.unified.active ? 'true' : undefined}
              onClick={props.onOpenUnified}
              title="All inboxes"
              data-testid="mail-unified"
            >
              <span className="mail-folder-icon" aria-hidden="true">
                <InboxIcon />
              </span>
              <span className="mail-folder-name">All inboxes</span>
              {props.unified.unread > 0 && (
                <span className="mail-unread" data-testid="mail-unified-unread" aria-label={`${props.unified.unread} unread`}>
                  {props.unified.unread}
                </span>
              )}
            </button>
          </li>
        </ul>
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
              title={f.specialUse === 'inbox' ? 'Inbox' : f.leaf}
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
      {props.footer}
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
                  title={name}
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
