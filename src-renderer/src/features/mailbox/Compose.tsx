/**
 * The compose window: to/cc/bcc with address suggestions from the cache, subject, plain or
 * rich text, attachments by drag and drop or picker (uploaded to the account's `ephemeral`
 * area, then passed by id to mail.send), drafts, and sending with a visible state and the
 * SMTP server's own error when it fails.
 */
import { useEffect, useRef, useState } from 'react';
import type { Account } from '../../../../src-main/contract';
import type { MailMessage, MailPerson } from '../../../../src-main/contract/mail';
import { errorMessage } from '../../api/client';
import { useApi } from '../../api/hooks';
import { formatBytes, formatDate } from '../../components/format';
import { PaperclipIcon } from '../../components/Icons';
import { useUi } from '../../stores/ui';
import { hasFiles } from '../files/dnd';
import { formatPerson, parseRecipients, useContacts } from './mailQueries';
import './mailbox.css';

export interface ComposeInit {
  mode: 'new' | 'reply' | 'replyAll' | 'forward';
  original?: MailMessage;
}

interface Attachment {
  key: string;
  name: string;
  size: number;
  state: 'uploading' | 'ready' | 'failed';
  loaded: number;
  error?: string;
  ref?: { account: number; id: string };
  abort?: () => void;
}

const quote = (text: string) =>
  text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

function initial(init: ComposeInit, own: string) {
  const o = init.original;
  if (!o) return { to: '', cc: '', subject: '', body: '' };
  const prefix = init.mode === 'forward' ? 'Fwd: ' : 'Re: ';
  const subject = new RegExp(`^${prefix.trim()}`, 'i').test(o.subject) ? o.subject : prefix + o.subject;
  const header = `On ${formatDate(o.created)}, ${formatPerson(o.from)} wrote:`;
  const text = o.textBody ?? o.snippet ?? '';
  if (init.mode === 'forward') {
    const fwd = ['', '', '---------- Forwarded message ----------', `From: ${formatPerson(o.from)}`, `Date: ${formatDate(o.created)}`, `Subject: ${o.subject}`, `To: ${o.to.map(formatPerson).join(', ')}`, '', text].join('\n');
    return { to: '', cc: '', subject, body: fwd };
  }
  const notMe = (p: MailPerson) => p.email.toLowerCase() !== own;
  const to = o.from ? [o.from] : [];
  const cc = init.mode === 'replyAll' ? [...o.to, ...o.cc].filter(notMe).filter((p) => !to.some((t) => t.email === p.email)) : [];
  return { to: to.map(formatPerson).join(', '), cc: cc.map(formatPerson).join(', '), subject, body: `\n\n${header}\n${quote(text)}` };
}

export function Compose(props: { account: Account; init: ComposeInit; onClose(): void; onSent(): void }) {
  const api = useApi();
  const own = String(props.account.settings.email ?? props.account.settings.user ?? '').toLowerCase();
  const start = useRef(initial(props.init, own)).current;
  const [to, setTo] = useState(start.to);
  const [cc, setCc] = useState(start.cc);
  const [bcc, setBcc] = useState('');
  const [showCc, setShowCc] = useState(!!start.cc);
  const [subject, setSubject] = useState(start.subject);
  const [body, setBody] = useState(start.body);
  const [rich, setRich] = useState(false);
  const richRef = useRef<HTMLDivElement>(null);
  const [attachments, setAttachments] = useState<Attachment[]>(() =>
    // Forwarding keeps the original's attachments: they are storage files of this account.
    props.init.mode === 'forward' && props.init.original?.attachments
      ? props.init.original.attachments.map((f) => ({ key: f.id, name: f.name, size: f.size ?? 0, state: 'ready' as const, loaded: f.size ?? 0, ref: { account: props.account.id, id: f.id } }))
      : [],
  );
  const [status, setStatus] = useState<{ kind: 'idle' | 'sending' | 'saving' | 'saved' } | { kind: 'error'; message: string }>({ kind: 'idle' });
  const [draftId, setDraftId] = useState<string | null>(null);
  const [dragOver, setDragOver] = useState(false);
  const [activeField, setActiveField] = useState<'to' | 'cc' | 'bcc' | null>(null);
  const pickerRef = useRef<HTMLInputElement>(null);
  const firstRef = useRef<HTMLInputElement>(null);
  const bodyRef = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (props.init.mode === 'reply' || props.init.mode === 'replyAll') {
      bodyRef.current?.focus();
      bodyRef.current?.setSelectionRange(0, 0);
    } else firstRef.current?.focus();
  }, [props.init.mode]);

  const fieldValue = activeField === 'to' ? to : activeField === 'cc' ? cc : activeField === 'bcc' ? bcc : '';
  const lastToken = fieldValue.split(/[,;]/).pop() ?? '';
  const contacts = useContacts(props.account.id, activeField ? lastToken : '');
  const suggestions = (contacts.data ?? []).filter((p) => !fieldValue.toLowerCase().includes(p.email.toLowerCase()));

  const addFiles = (files: File[]) => {
    if (api.mode === 'ipc') {
      // Desktop: the main process reads the dropped or picked file by its path (the preload maps
      // each File to it) and answers the new ephemeral file; progress shows in Transfers.
      for (const file of files) {
        const key = `${file.name}-${Math.random().toString(36).slice(2)}`;
        setAttachments((list) => [...list, { key, name: file.name, size: file.size, state: 'uploading', loaded: 0 }]);
        api.call('files.uploadPath', { account: props.account.id, parent: 'ephemeral', path: file as unknown as string, conflict: 'rename' }).then(
          (r) => setAttachments((list) => list.map((a) => (a.key === key ? { ...a, state: 'ready', loaded: a.size, ref: { account: r.account, id: r.id } } : a))),
          (e) => setAttachments((list) => list.map((a) => (a.key === key ? { ...a, state: 'failed', error: errorMessage(e) } : a))),
        );
      }
      return;
    }
    for (const file of files) {
      const key = `${file.name}-${Math.random().toString(36).slice(2)}`;
      const up = api.upload(file, { account: props.account.id, parent: 'ephemeral', conflict: 'rename' }, (loaded) =>
        setAttachments((list) => list.map((a) => (a.key === key ? { ...a, loaded } : a))),
      );
      setAttachments((list) => [...list, { key, name: file.name, size: file.size, state: 'uploading', loaded: 0, abort: up.abort }]);
      up.done.then(
        (r) => setAttachments((list) => list.map((a) => (a.key === key ? { ...a, state: 'ready', loaded: a.size, ref: { account: r.account, id: r.id } } : a))),
        (e) => setAttachments((list) => list.map((a) => (a.key === key ? { ...a, state: 'failed', error: errorMessage(e) } : a))),
      );
    }
  };

  const message = () => {
    const people = { to: parseRecipients(to), cc: parseRecipients(cc), bcc: parseRecipients(bcc) };
    const html = rich ? (richRef.current?.innerHTML ?? '') : undefined;
    const text = rich ? (richRef.current?.innerText ?? '') : body;
    const ready = attachments.filter((a) => a.state === 'ready' && a.ref).map((a) => a.ref!);
    return { account: props.account.id, ...people, subject, textBody: text, htmlBody: html, replyTo: props.init.mode === 'forward' ? undefined : props.init.original?.id, attachments: ready };
  };

  const send = async () => {
    let m;
    try {
      m = message();
    } catch (e) {
      return setStatus({ kind: 'error', message: errorMessage(e) });
    }
    if (!m.to.length) return setStatus({ kind: 'error', message: 'Add at least one recipient.' });
    if (attachments.some((a) => a.state === 'uploading')) return setStatus({ kind: 'error', message: 'Wait for the attachments to finish uploading.' });
    if (attachments.some((a) => a.state === 'failed')) return setStatus({ kind: 'error', message: 'Remove the attachments that failed to upload.' });
    setStatus({ kind: 'sending' });
    try {
      const sent = await api.call('mail.send', { ...m, to: m.to, cc: m.cc.length ? m.cc : undefined, bcc: m.bcc.length ? m.bcc : undefined });
      // The draft has been sent (or is in the outbox, which keeps it): remove the saved copy.
      if (draftId) await api.call('mail.delete', { account: props.account.id, id: draftId }).catch(() => {});
      const waiting = (sent.raw.outbox as { state?: string; error?: string | null } | undefined)?.state === 'queued' ? (sent.raw.outbox as { error?: string | null }) : null;
      if (waiting) useUi.getState().toast({ kind: 'info', title: 'In the outbox: sent when the server can be reached', message: waiting.error ?? subject });
      else useUi.getState().toast({ kind: 'info', title: 'Message sent', message: subject || '(no subject)' });
      props.onSent();
      props.onClose();
    } catch (e) {
      setStatus({ kind: 'error', message: `Not sent: ${errorMessage(e)}` });
    }
  };

  const saveDraft = async () => {
    let m;
    try {
      m = message();
    } catch (e) {
      return setStatus({ kind: 'error', message: errorMessage(e) });
    }
    setStatus({ kind: 'saving' });
    try {
      const saved = await api.call('mail.saveDraft', { ...m, replaces: draftId ?? undefined });
      setDraftId(saved.id);
      setStatus({ kind: 'saved' });
    } catch (e) {
      setStatus({ kind: 'error', message: `Draft not saved: ${errorMessage(e)}` });
    }
  };

  const busy = status.kind === 'sending' || status.kind === 'saving';
  const title = props.init.mode === 'new' ? 'New message' : props.init.mode === 'forward' ? 'Forward' : 'Reply';

  const recipientField = (label: string, key: 'to' | 'cc' | 'bcc', value: string, set: (v: string) => void, ref?: React.RefObject<HTMLInputElement | null>) => (
    <div className="compose-field">
      <label htmlFor={`compose-${key}`}>{label}</label>
      <div className="compose-input-wrap">
        <input
          ref={ref}
          id={`compose-${key}`}
          className="compose-input"
          value={value}
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => set(e.target.value)}
          onFocus={() => setActiveField(key)}
          onBlur={() => setTimeout(() => setActiveField((f) => (f === key ? null : f)), 150)}
          data-testid={`compose-${key}`}
        />
        {activeField === key && suggestions.length > 0 && (
          <ul className="suggestions" role="listbox" data-testid="compose-suggestions">
            {suggestions.map((p) => (
              <li key={p.email}>
                <button
                  type="button"
                  role="option"
                  aria-selected={false}
                  onMouseDown={(e) => e.preventDefault()}
                  onClick={() => {
                    const parts = value.split(/[,;]/);
                    parts[parts.length - 1] = ` ${formatPerson(p)}`;
                    set(parts.join(',').replace(/^\s+/, '') + ', ');
                  }}
                >
                  {formatPerson(p)}
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );

  return (
    <section
      className={`compose${dragOver ? ' drop-active' : ''}`}
      aria-label={title}
      role="dialog"
      data-testid="compose-window"
      onDragOver={(e) => {
        if (!hasFiles(e.dataTransfer)) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = 'copy';
        setDragOver(true);
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDragOver(false);
      }}
      onDrop={(e) => {
        e.preventDefault();
        setDragOver(false);
        addFiles(Array.from(e.dataTransfer.files));
      }}
      onKeyDown={(e) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          void send();
        }
        if (e.key === 'Escape') props.onClose();
      }}
    >
      <header className="compose-head">
        <h2>{title}</h2>
        <button type="button" className="icon-btn" aria-label="Close" onClick={props.onClose} data-testid="compose-close">
          ×
        </button>
      </header>
      {recipientField('To', 'to', to, setTo, firstRef)}
      {showCc ? (
        <>
          {recipientField('Cc', 'cc', cc, setCc)}
          {recipientField('Bcc', 'bcc', bcc, setBcc)}
        </>
      ) : (
        <button type="button" className="link-btn compose-cc-toggle" onClick={() => setShowCc(true)} data-testid="compose-show-cc">
          Cc / Bcc
        </button>
      )}
      <div className="compose-field">
        <label htmlFor="compose-subject">Subject</label>
        <input id="compose-subject" className="compose-input" value={subject} onChange={(e) => setSubject(e.target.value)} data-testid="compose-subject" />
      </div>
      <div className="compose-body">
        {rich ? (
          <>
            <div className="rich-bar" role="toolbar" aria-label="Formatting">
              {(
                [
                  ['bold', 'B'],
                  ['italic', 'I'],
                  ['underline', 'U'],
                  ['insertUnorderedList', '• List'],
                ] as const
              ).map(([cmd, label]) => (
                <button key={cmd} type="button" className="btn btn-small btn-ghost" onMouseDown={(e) => e.preventDefault()} onClick={() => document.execCommand(cmd)}>
                  {label}
                </button>
              ))}
            </div>
            <div
              ref={richRef}
              className="compose-rich"
              contentEditable
              suppressContentEditableWarning
              role="textbox"
              aria-multiline="true"
              aria-label="Message"
              data-testid="compose-rich"
              // A pasted image becomes an attachment (sent over HTTP), not a data: URL inside the
              // body, which could outgrow the 1 MiB of one call.
              onPaste={(e) => {
                const files = Array.from(e.clipboardData.files);
                if (files.length === 0) return;
                e.preventDefault();
                addFiles(files);
              }}
            >
              {body}
            </div>
          </>
        ) : (
          <textarea ref={bodyRef} className="compose-text" aria-label="Message" value={body} onChange={(e) => setBody(e.target.value)} data-testid="compose-body" />
        )}
      </div>
      {attachments.length > 0 && (
        <ul className="compose-attachments" aria-label="Attachments">
          {attachments.map((a) => (
            <li key={a.key} className={`attachment-chip state-${a.state}`} data-testid="compose-attachment" data-state={a.state} data-name={a.name}>
              <PaperclipIcon /> <span>{a.name}</span>
              <span className="muted">{a.state === 'uploading' ? `${Math.round((a.loaded / Math.max(a.size, 1)) * 100)}%` : a.state === 'failed' ? a.error : formatBytes(a.size)}</span>
              <button
                type="button"
                className="icon-btn"
                aria-label={`Remove ${a.name}`}
                onClick={() => {
                  a.abort?.();
                  setAttachments((list) => list.filter((x) => x.key !== a.key));
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {status.kind === 'error' && (
        <div className="form-status error compose-status" role="alert" data-testid="compose-error">
          {status.message}
        </div>
      )}
      <footer className="compose-actions">
        <button type="button" className="btn btn-primary" onClick={() => void send()} disabled={busy} data-testid="compose-send">
          {status.kind === 'sending' ? (
            <>
              <span className="spinner spinner-light" aria-hidden="true" /> Sending…
            </>
          ) : (
            'Send'
          )}
        </button>
        <button type="button" className="btn" onClick={() => pickerRef.current?.click()} disabled={busy} data-testid="compose-attach">
          <PaperclipIcon size={16} /> Attach
        </button>
        <input
          ref={pickerRef}
          type="file"
          multiple
          hidden
          data-testid="compose-attach-input"
          onChange={(e) => {
            addFiles(Array.from(e.currentTarget.files ?? []));
            e.currentTarget.value = '';
          }}
        />
        <label className="compose-rich-toggle">
          <input
            type="checkbox"
            checked={rich}
            onChange={(e) => {
              // Switching keeps the text: plain → rich carries the text over, rich → plain its visible text.
              if (!e.target.checked && richRef.current) setBody(richRef.current.innerText);
              setRich(e.target.checked);
            }}
            data-testid="compose-rich-toggle"
          />
          Rich text
        </label>
        <span className="push-left" />
        <span className="muted compose-state" role="status" data-testid="compose-state">
          {status.kind === 'saving' ? 'Saving draft…' : status.kind === 'saved' ? 'Draft saved' : ''}
        </span>
        <button type="button" className="btn btn-ghost" onClick={() => void saveDraft()} disabled={busy} data-testid="compose-save-draft">
          Save draft
        </button>
      </footer>
    </section>
  );
}
