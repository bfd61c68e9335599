/**
 * The reading pane: the conversation of the selected message, every folder's copy of it (Sent
 * included), oldest first, read messages collapsed to one line; for each open message its
 * headers, attachments and body. A body is rendered only in a sandboxed srcdoc iframe (see
 * safeHtml.ts); remote images stay blocked until the user allows them for this message or for
 * this sender; links open outside the frame.
 */
import { useEffect, useMemo, useState } from 'react';
import type { Account } from '../../../../src-main/contract';
import type { MailFile, MailFolder, MailMessage } from '../../../../src-main/contract/mail';
import { useQueryClient } from '@tanstack/react-query';
import { keys, useApi } from '../../api/hooks';
import { formatBytes, formatDate } from '../../components/format';
import { DownloadIcon, FlagIcon, MailIcon, TrashIcon } from '../../components/Icons';
import { toastError, useUi } from '../../stores/ui';
import { formatPerson, isDraft, isWrappedText, useMessage, useThread, type Thread } from './mailQueries';
import { FRAME_SANDBOX, prepareHtml, textToHtml, trustedSenders, trustSender } from './safeHtml';

export function Reader(props: {
  account: Account;
  summary: MailMessage;
  thread: Thread;
  folders: MailFolder[];
  onSelect(id: string): void;
  onReply(m: MailMessage, mode: 'reply' | 'replyAll' | 'forward'): void;
  onFlags(m: MailMessage, flags: { seen?: boolean; flagged?: boolean }): void;
  onMove(m: MailMessage, to: MailFolder): void;
  onDelete(m: MailMessage): void;
  /** Back to the list (narrow windows show one of them). */
  onBack?(): void;
}) {
  const full = useMessage(props.account.id, props.summary.id);
  // Flags come from the list (kept current by events), the body from mail.get.
  const m: MailMessage = full.data ? { ...full.data, seen: props.summary.seen, flagged: props.summary.flagged } : props.summary;

  // Opening a message marks it read.
  useEffect(() => {
    if (!props.summary.seen) props.onFlags(props.summary, { seen: true });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.summary.id]);

  // The whole conversation, every folder (Sent included; drafts, Trash and Junk only when the
  // selected message is there too), oldest first; one copy per Message-ID.
  const thread = useThread(props.account.id, props.summary.threadId);
  const conversation = useMemo(() => {
    const aside = new Set(props.folders.filter((f) => f.specialUse === 'trash' || f.specialUse === 'junk').map((f) => f.id));
    const list = (thread.data ?? props.thread.messages).filter((x) => x.id === props.summary.id || x.folderId === props.summary.folderId || (!aside.has(x.folderId) && !isDraft(x)));
    const byMid = new Map<string, MailMessage>();
    const out: MailMessage[] = [];
    for (const x of [...list].sort((a, b) => Date.parse(a.created) - Date.parse(b.created))) {
      const key = x.messageId ?? x.id;
      const prev = byMid.get(key);
      // The copy the user selected, else the one in the listed folder, stands for the message.
      if (prev && !(x.id === props.summary.id || (x.folderId === props.summary.folderId && prev.id !== props.summary.id))) continue;
      if (prev) out.splice(out.indexOf(prev), 1, x);
      else out.push(x);
      byMid.set(key, x);
    }
    if (!out.some((x) => x.id === props.summary.id)) out.push(props.summary);
    return out;
  }, [thread.data, props.thread.messages, props.summary, props.folders]);
  // Read messages start collapsed; the selected one, unread ones and the newest start open.
  const [opened, setOpened] = useState<Set<string>>(() => new Set());
  const isOpen = (x: MailMessage, i: number) => x.id === props.summary.id || !x.seen || i === conversation.length - 1 || opened.has(x.id);
  const openCount = conversation.filter(isOpen).length;

  const moveTargets = props.folders.filter((f) => f.id !== m.folderId);

  return (
    <article className="reader" aria-label="Message" data-testid="reader">
      <div className="reader-actions">
        {props.onBack && (
          <button type="button" className="btn btn-small reader-back" onClick={props.onBack} data-testid="reader-back" aria-label="Back to the list">
            ←
          </button>
        )}
        <button type="button" className="btn btn-small" onClick={() => props.onReply(m, 'reply')} data-testid="reply" title="Reply (r)">
          Reply
        </button>
        <button type="button" className="btn btn-small" onClick={() => props.onReply(m, 'replyAll')} data-testid="reply-all" title="Reply all (a)">
          Reply all
        </button>
        <button type="button" className="btn btn-small" onClick={() => props.onReply(m, 'forward')} data-testid="forward" title="Forward (f)">
          Forward
        </button>
        <span className="reader-actions-sep" />
        <button type="button" className="icon-btn" onClick={() => props.onFlags(m, { seen: !m.seen })} data-testid="toggle-read" aria-label={m.seen ? 'Mark unread' : 'Mark read'} title={`${m.seen ? 'Mark unread' : 'Mark read'} (u)`}>
          <MailIcon />
        </button>
        <button type="button" className={`icon-btn${m.flagged ? ' flag-on' : ''}`} aria-pressed={m.flagged} onClick={() => props.onFlags(m, { flagged: !m.flagged })} data-testid="toggle-flag" aria-label="Flag" title={`${m.flagged ? 'Unflag' : 'Flag'} (s)`}>
          <FlagIcon size={18} filled={m.flagged} />
        </button>
        <select
          className="input input-small"
          aria-label="Move to folder"
          value=""
          onChange={(e) => {
            const to = moveTargets.find((f) => f.id === e.target.value);
            if (to) props.onMove(m, to);
          }}
          data-testid="move-to"
        >
          <option value="">Move to…</option>
          {moveTargets.map((f) => (
            <option key={f.id} value={f.id}>
              {f.name}
            </option>
          ))}
        </select>
        <button type="button" className="icon-btn" aria-label="Delete" title="Delete (#)" onClick={() => props.onDelete(m)} data-testid="delete-message">
          <TrashIcon />
        </button>
      </div>
      <header className="reader-head">
        <h2 className="reader-subject" data-testid="reader-subject">
          {m.subject || '(no subject)'}
        </h2>
        <Labels account={props.account.id} message={m} />
        {conversation.length > 1 && (
          <div className="reader-thread" data-testid="conversation-count">
            {conversation.length} messages in this conversation
          </div>
        )}
      </header>
      <div className={`reader-conversation${openCount === 1 ? ' single' : ''}`} data-testid="conversation">
        {conversation.map((x, i) =>
          isOpen(x, i) ? (
            <MessageView key={x.id} account={props.account} summary={x.id === props.summary.id ? m : x} current={x.id === props.summary.id} onSelect={props.onSelect} />
          ) : (
            <button
              key={x.id}
              type="button"
              className="conv-collapsed"
              onClick={() => setOpened((s) => new Set(s).add(x.id))}
              data-testid="conversation-collapsed"
              aria-expanded={false}
              title="Show this message"
            >
              <strong>{x.from?.name || x.from?.email || '(unknown sender)'}</strong>
              <span className="conv-snippet">{x.snippet ?? ''}</span>
              <span className="muted">{formatDate(x.created)}</span>
            </button>
          ),
        )}
      </div>
    </article>
  );
}

/** One message of the conversation, open: who, when, attachments and the body. */
function MessageView(props: { account: Account; summary: MailMessage; current: boolean; onSelect(id: string): void }) {
  const api = useApi();
  const full = useMessage(props.account.id, props.summary.id);
  const m: MailMessage = full.data ? { ...full.data, seen: props.summary.seen, flagged: props.summary.flagged } : props.summary;
  const sender = m.from?.email.toLowerCase() ?? '';
  const [allowedHere, setAllowedHere] = useState(false);
  const [senderTrusted, setSenderTrusted] = useState(() => !!sender && trustedSenders().has(sender));
  const allowRemote = allowedHere || senderTrusted;

  // A plain-text message (the server wraps it in a lone <pre>) is shown as text by React: escaped, no frame needed.
  const plain = full.data ? isWrappedText(full.data) : false;
  const prepared = useMemo(() => {
    if (!full.data || plain) return null;
    const html = full.data.htmlBody ?? textToHtml(full.data.textBody ?? '');
    return prepareHtml(html, allowRemote);
  }, [full.data, plain, allowRemote]);

  const download = async (f: MailFile) => {
    try {
      if (api.mode === 'ws') return await api.download({ account: props.account.id, id: f.id, name: f.name });
      const r = await api.call('files.download', { account: props.account.id, id: f.id });
      if (r.path) useUi.getState().toast({ kind: 'info', title: 'Downloaded', message: r.path });
    } catch (e) {
      toastError(`Could not download "${f.name}"`, e);
    }
  };

  return (
    <section className={`conv-message${props.current ? ' current' : ''}`} aria-label={`Message from ${formatPerson(m.from)}`} data-testid="conversation-message" data-current={props.current}>
      <div className="reader-meta">
        <div>
          {props.current ? (
            <strong>{formatPerson(m.from)}</strong>
          ) : (
            <button type="button" className="link-btn" onClick={() => props.onSelect(m.id)} title="Select this message">
              <strong>{formatPerson(m.from)}</strong>
            </button>
          )}
        </div>
        <div className="muted">
          To: {m.to.map(formatPerson).join(', ') || '—'}
          {m.cc.length > 0 && <> · Cc: {m.cc.map(formatPerson).join(', ')}</>}
        </div>
        <div className="muted" data-testid="message-date">
          {formatDate(m.created)}
        </div>
      </div>
      {m.attachments && m.attachments.length > 0 && (
        <ul className="reader-attachments" aria-label="Attachments">
          {m.attachments.map((f) => (
            <li key={f.id}>
              <button type="button" className="attachment-chip" onClick={() => void download(f)} data-testid="attachment" data-name={f.name}>
                <DownloadIcon /> {f.name} <span className="muted">{formatBytes(f.size)}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {prepared?.hasRemote && !allowRemote && (
        <div className="remote-banner" role="status" data-testid="remote-blocked">
          <span>Remote images in this message are blocked to protect your privacy.</span>
          <button type="button" className="btn btn-small" onClick={() => setAllowedHere(true)} data-testid="allow-remote">
            Show images
          </button>
          {sender && (
            <button
              type="button"
              className="btn btn-small btn-ghost"
              onClick={() => {
                trustSender(sender);
                setSenderTrusted(true);
              }}
              data-testid="allow-remote-sender"
            >
              Always from {sender}
            </button>
          )}
        </div>
      )}
      <div className="reader-body">
        {full.isLoading ? (
          <div className="list-state">
            <span className="spinner" aria-hidden="true" /> Loading message…
          </div>
        ) : full.error ? (
          <div className="list-state list-error" role="alert">
            {full.error.message}
          </div>
        ) : plain ? (
          <div className="mail-text" data-testid="mail-text">
            {full.data!.textBody}
          </div>
        ) : prepared ? (
          // No scripts, no same-origin, no forms, no top navigation. Links open outside the frame:
          // every link targets a new browsing context with noopener (safeHtml.ts), which the sandbox
          // lets escape it; the desktop app turns that into "open in the system browser?".
          <iframe
            key={allowRemote ? 'remote' : 'blocked'}
            className="mail-frame"
            title="Message body"
            sandbox={FRAME_SANDBOX}
            referrerPolicy="no-referrer"
            srcDoc={prepared.srcdoc}
            data-testid="mail-frame"
            data-remote={allowRemote ? 'allowed' : 'blocked'}
          />
        ) : null}
      </div>
    </section>
  );
}

/** The message's labels (IMAP keywords): remove with ×, add by name. */
function Labels({ account, message }: { account: number; message: MailMessage }) {
  const api = useApi();
  const qc = useQueryClient();
  const [adding, setAdding] = useState(false);
  const names = message.labels.map((l) => l.name);
  const save = async (next: string[]) => {
    try {
      const updated = await api.call('mail.setLabels', { account, id: message.id, labels: next });
      qc.setQueryData([...keys.mail(account), 'message', message.id], updated);
    } catch (e) {
      toastError('Could not change the labels', e);
    }
    await qc.invalidateQueries({ queryKey: keys.mail(account), predicate: (q) => q.queryKey[2] !== 'message' });
  };
  return (
    <div className="reader-labels" data-testid="reader-labels">
      {names.map((n) => (
        <span key={n} className="label-chip" data-testid="label-chip" data-name={n}>
          {n}
          <button type="button" aria-label={`Remove label ${n}`} onClick={() => void save(names.filter((x) => x !== n))}>
            ×
          </button>
        </span>
      ))}
      {adding ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const name = String(new FormData(e.currentTarget).get('label') ?? '').trim();
            setAdding(false);
            if (name && !names.includes(name)) void save([...names, name]);
          }}
        >
          <input name="label" className="input input-small label-input" autoFocus placeholder="Label" aria-label="New label" onBlur={() => setAdding(false)} data-testid="label-input" />
        </form>
      ) : (
        <button type="button" className="link-btn small" onClick={() => setAdding(true)} data-testid="label-add">
          + Label
        </button>
      )}
    </div>
  );
}
