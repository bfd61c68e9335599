/**
 * The compose window: to/cc/bcc with address suggestions from the cache (mouse or keyboard),
 * subject, plain or rich text, attachments by drag and drop or picker (uploaded to the account's
 * `ephemeral` area, then passed by id to mail.send), replies and forwards that start from the
 * whole original (mail.quote) and keep its parts, drafts saved to Drafts a few seconds after
 * typing stops (each save replacing the last), a question before a changed message is closed,
 * and sending with a visible state and the SMTP server's own error when it fails.
 */
import { useEffect, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { MailMessage, MailPerson } from '../../../../src-main/contract/mail';
import { errorMessage } from '../../api/client';
import { keys, useApi } from '../../api/hooks';
import { Dialog } from '../../components/Dialog';
import { formatBytes } from '../../components/format';
import { PaperclipIcon } from '../../components/Icons';
import { useUi } from '../../stores/ui';
import { hasFiles } from '../files/dnd';
import { formatPerson, isDraft, parseRecipients, threadMessages, useContacts } from './mailQueries';
import './mailbox.css';

export interface ComposeInit {
  /** `draft`: a message of Drafts reopened (`original` is that draft). */
  mode: 'new' | 'reply' | 'replyAll' | 'forward' | 'draft';
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
  /** A part of the message in `attachFrom` (forwarded, or kept in a reopened draft), by its index there. */
  part?: number;
  abort?: () => void;
}

/** Typing stops this long before the draft is saved. */
export const AUTOSAVE_MS = 3000;

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const textAsHtml = (t: string) => escapeHtml(t).replace(/\n/g, '<br>');

/**
 * The account's signature (option `signature`) below the text the user writes: plain text after
 * the "-- " separator line (RFC 3676), rich text in a signature block. Replies and forwards have
 * it above the quote; a reopened draft already carries it, so it gets none.
 */
export function signatureText(signature: unknown): string {
  const sig = typeof signature === 'string' ? signature.replace(/\r\n?/g, '\n').trimEnd() : '';
  return sig ? `\n\n-- \n${sig}` : '';
}

function signatureHtml(signature: unknown): string {
  const text = signatureText(signature);
  return text ? `<p><br></p><div class="compose-signature" data-signature="">${textAsHtml(text.slice(2))}</div>` : '';
}

function recipients(init: ComposeInit, own: string) {
  const o = init.original;
  if (!o) return { to: '', cc: '', bcc: '' };
  if (init.mode === 'draft') return { to: o.to.map(formatPerson).join(', '), cc: o.cc.map(formatPerson).join(', '), bcc: o.bcc.map(formatPerson).join(', ') };
  if (init.mode === 'forward') return { to: '', cc: '', bcc: '' };
  const notMe = (p: MailPerson) => p.email.toLowerCase() !== own;
  const to = o.from ? [o.from] : [];
  const cc = init.mode === 'replyAll' ? [...o.to, ...o.cc].filter(notMe).filter((p) => !to.some((t) => t.email === p.email)) : [];
  return { to: to.map(formatPerson).join(', '), cc: cc.map(formatPerson).join(', '), bcc: '' };
}

function initialSubject(init: ComposeInit): string {
  const o = init.original;
  if (!o) return '';
  if (init.mode === 'draft') return o.subject;
  const prefix = init.mode === 'forward' ? 'Fwd:' : 'Re:';
  return new RegExp(`^\\s*${prefix}`, 'i').test(o.subject) ? o.subject : `${prefix} ${o.subject}`;
}

export function Compose(props: { account: Account; init: ComposeInit; onClose(): void; onSent(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const own = String(props.account.settings.email ?? props.account.settings.user ?? '').toLowerCase();
  const { init } = props;
  const start = useRef(recipients(init, own)).current;
  const [to, setTo] = useState(start.to);
  const [cc, setCc] = useState(start.cc);
  const [bcc, setBcc] = useState(start.bcc);
  const [showCc, setShowCc] = useState(!!(start.cc || start.bcc));
  const [subject, setSubject] = useState(() => initialSubject(init));
  const signature = props.account.settings.signature;
  const [body, setBody] = useState(() => (init.mode === 'new' ? signatureText(signature) : ''));
  const [rich, setRich] = useState(false);
  // Rich content lives in the editor's DOM; `richVersion` counts its edits (for autosave and "changed").
  const [richVersion, setRichVersion] = useState(0);
  const richRef = useRef<HTMLDivElement>(null);
  const richInit = useRef<string | null>(null);
  /** The editor's last content, for a save after the editor is gone (the window closing with the mailbox). */
  const lastRich = useRef({ html: '', text: '' });
  /** The quote as text (`> ` lines): what switching an untouched rich reply to plain text shows. */
  const quoteText = useRef<string | null>(null);
  /** Inline images of the quoted original, by Content-ID: shown as data: URLs, sent as cid:. */
  const images = useRef<Record<string, string>>({});
  const [attachFromId, setAttachFromId] = useState<string | null>(init.mode === 'forward' || init.mode === 'draft' || init.mode === 'reply' || init.mode === 'replyAll' ? (init.original?.id ?? null) : null);
  /** Inline parts of the original are sent along (the quote refers to them), never shown as chips. */
  const [inlineParts, setInlineParts] = useState<number[]>([]);
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  /** The message this one answers (In-Reply-To, References, \\Answered when sent). */
  const [replyTo, setReplyTo] = useState<string | undefined>(init.mode === 'reply' || init.mode === 'replyAll' ? init.original?.id : undefined);
  const [loading, setLoading] = useState(init.mode !== 'new' && !!init.original);
  const [status, setStatus] = useState<{ kind: 'idle' | 'sending' | 'saving' | 'saved' } | { kind: 'error'; message: string }>({ kind: 'idle' });
  const [draftId, setDraftId] = useState<string | null>(init.mode === 'draft' ? (init.original?.id ?? null) : null);
  const [confirmClose, setConfirmClose] = useState(false);
  const [dragOver, setDragOver] = useState(false);
  const [activeField, setActiveField] = useState<'to' | 'cc' | 'bcc' | null>(null);
  const [highlight, setHighlight] = useState(0);
  const [suggestionsHidden, setSuggestionsHidden] = useState(false);
  const pickerRef = useRef<HTMLInputElement>(null);
  const firstRef = useRef<HTMLInputElement>(null);
  const bodyRef = useRef<HTMLTextAreaElement>(null);

  // Reply and forward start from the whole original, quoted by the server (text and sanitized
  // HTML); a reopened draft from its own body and parts.
  useEffect(() => {
    const o = init.original;
    if (!o || init.mode === 'new') return;
    let live = true;
    (async () => {
      try {
        const q = await api.call('mail.quote', { account: props.account.id, id: o.id, mode: init.mode === 'forward' ? 'forward' : init.mode === 'draft' ? 'edit' : 'reply' });
        if (!live) return;
        images.current = q.images;
        const draft = init.mode === 'draft';
        // The signature goes above the quote, between the reply and what it answers.
        const text = draft ? q.text : signatureText(signature) + q.text;
        quoteText.current = draft ? null : text;
        setBody(text);
        if (q.rich) {
          const html = draft ? q.html : `${signatureHtml(signature)}${q.html}`;
          richInit.current = Object.entries(q.images).reduce((h, [cid, url]) => h.split(`cid:${cid}`).join(url), html);
          setRich(true);
        }
        setInlineParts(q.parts.filter((p) => p.inline).map((p) => p.index));
        // A reopened reply still answers its original: the message of its conversation whose
        // Message-ID the draft's In-Reply-To names.
        const irt = init.mode === 'draft' && typeof o.raw.in_reply_to === 'string' ? o.raw.in_reply_to : null;
        if (irt) {
          const answered = (await threadMessages(api, props.account.id, o.threadId)).find((x) => x.messageId === irt && !isDraft(x));
          if (live && answered) setReplyTo(answered.id);
        }
        // A forward keeps the original's attachments, a draft its own.
        if (init.mode === 'forward' || init.mode === 'draft') setAttachments(q.parts.filter((p) => !p.inline).map((p) => ({ key: `part-${p.index}`, name: p.name, size: p.size, state: 'ready', loaded: p.size, part: p.index })));
      } catch (e) {
        if (live) setStatus({ kind: 'error', message: `Could not load the original: ${errorMessage(e)}` });
      } finally {
        if (live) setLoading(false);
      }
    })();
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // The rich editor gets its starting HTML once, when it appears.
  useEffect(() => {
    const el = richRef.current;
    if (!rich || !el) return;
    if (richInit.current !== null) {
      el.innerHTML = richInit.current;
      richInit.current = null;
    } else if (!el.innerHTML) el.innerHTML = textAsHtml(body);
    lastRich.current = { html: el.innerHTML, text: el.innerText };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [rich, loading]);

  useEffect(() => {
    if (loading) return;
    if (init.mode === 'reply' || init.mode === 'replyAll') {
      const el = rich ? richRef.current : bodyRef.current;
      el?.focus();
      if (el instanceof HTMLTextAreaElement) el.setSelectionRange(0, 0);
      else if (el) {
        const r = document.createRange();
        r.setStart(el, 0);
        r.collapse(true);
        window.getSelection()?.removeAllRanges();
        window.getSelection()?.addRange(r);
      }
    } else firstRef.current?.focus();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [loading]);

  const fieldValue = activeField === 'to' ? to : activeField === 'cc' ? cc : activeField === 'bcc' ? bcc : '';
  const lastToken = fieldValue.split(/[,;]/).pop() ?? '';
  const contacts = useContacts(props.account.id, activeField ? lastToken : '');
  const suggestions = suggestionsHidden ? [] : (contacts.data ?? []).filter((p) => !fieldValue.toLowerCase().includes(p.email.toLowerCase()));
  useEffect(() => setHighlight(0), [lastToken, activeField]);

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

  /** The editor's HTML with the quoted inline images back as cid: references. */
  const richHtml = () => Object.entries(images.current).reduce((h, [cid, url]) => h.split(url).join(`cid:${cid}`), richRef.current?.innerHTML ?? lastRich.current.html);

  const message = () => {
    const people = { to: parseRecipients(to), cc: parseRecipients(cc), bcc: parseRecipients(bcc) };
    const html = rich ? richHtml() : undefined;
    const text = rich ? (richRef.current?.innerText ?? lastRich.current.text) : body;
    const ready = attachments.filter((a) => a.state === 'ready' && a.ref).map((a) => a.ref!);
    const parts = [...(rich ? inlineParts : []), ...attachments.filter((a) => a.part !== undefined).map((a) => a.part!)].sort((a, b) => a - b);
    return {
      account: props.account.id,
      ...people,
      subject,
      textBody: text,
      htmlBody: html,
      replyTo,
      attachments: ready,
      attachFrom: attachFromId && parts.length ? { id: attachFromId, parts } : undefined,
    };
  };

  // What the window holds now; "changed" and autosave compare it with the last saved state.
  const snapshot = JSON.stringify([to, cc, bcc, subject, rich ? richVersion : body, rich, attachments.map((a) => `${a.key}:${a.state}`)]);
  const [savedSnapshot, setSavedSnapshot] = useState<string | null>(null);
  const startSnapshot = useRef<string | null>(null);
  if (!loading && startSnapshot.current === null) startSnapshot.current = snapshot;
  const baseline = savedSnapshot ?? startSnapshot.current;
  const unsaved = !loading && baseline !== null && snapshot !== baseline;

  // Saves run one after another: a save waits for the one before it, so each replaces the last.
  const saving = useRef<Promise<unknown>>(Promise.resolve());
  const draftRef = useRef(draftId);
  draftRef.current = draftId;
  const attachFromRef = useRef(attachFromId);
  attachFromRef.current = attachFromId;

  const saveDraft = (): Promise<boolean> => {
    const run = saving.current.then(async () => {
      let m;
      try {
        m = message();
      } catch (e) {
        setStatus({ kind: 'error', message: errorMessage(e) });
        return false;
      }
      if (attachments.some((a) => a.state === 'uploading')) return false;
      const taken = snapshot;
      setStatus({ kind: 'saving' });
      try {
        const saved = await api.call('mail.saveDraft', { ...m, attachFrom: m.attachFrom && { ...m.attachFrom, id: attachFromRef.current ?? m.attachFrom.id }, replaces: draftRef.current ?? undefined });
        // The saved draft now holds the kept parts, in order, ahead of the uploaded files.
        if (m.attachFrom) {
          const order = m.attachFrom.parts ?? [];
          setInlineParts((list) => list.map((i) => order.indexOf(i)).filter((i) => i >= 0));
          setAttachments((list) => list.map((a) => (a.part !== undefined ? { ...a, part: order.indexOf(a.part) } : a)));
          setAttachFromId(saved.id);
          attachFromRef.current = saved.id;
        }
        setDraftId(saved.id);
        draftRef.current = saved.id;
        setSavedSnapshot(taken);
        setStatus({ kind: 'saved' });
        void qc.invalidateQueries({ queryKey: keys.mail(props.account.id), predicate: (q) => q.queryKey[2] !== 'message' });
        return true;
      } catch (e) {
        setStatus({ kind: 'error', message: `Draft not saved: ${errorMessage(e)}` });
        return false;
      }
    });
    saving.current = run.catch(() => {});
    return run;
  };

  // Autosave: a few seconds after typing stops; never once sending has begun.
  const sendingRef = useRef(false);
  useEffect(() => {
    if (!unsaved || status.kind === 'sending') return;
    const t = setTimeout(() => {
      if (!sendingRef.current) void saveDraft();
    }, AUTOSAVE_MS);
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [snapshot, unsaved]);

  // The window going away without being closed (another account opened, the mailbox left) keeps
  // what was written: unsaved changes are saved to Drafts.
  const closing = useRef(false);
  const flush = useRef(() => {});
  flush.current = () => {
    if (unsaved && !closing.current && !sendingRef.current) void saveDraft();
  };
  useEffect(() => () => flush.current(), []);

  // Leaving the page with unsaved words asks first (the browser's own prompt).
  useEffect(() => {
    if (!unsaved) return;
    const h = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', h);
    return () => window.removeEventListener('beforeunload', h);
  }, [unsaved]);

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
    sendingRef.current = true;
    // A save under way finishes first: the draft it leaves is the one removed below.
    await saving.current;
    try {
      const sent = await api.call('mail.send', { ...m, to: m.to, cc: m.cc.length ? m.cc : undefined, bcc: m.bcc.length ? m.bcc : undefined, attachFrom: m.attachFrom && { ...m.attachFrom, id: attachFromRef.current ?? m.attachFrom.id } });
      // The draft has been sent (or is in the outbox, which keeps it): remove the saved copy.
      if (draftRef.current) await api.call('mail.delete', { account: props.account.id, id: draftRef.current }).catch(() => {});
      const waiting = (sent.raw.outbox as { state?: string; error?: string | null } | undefined)?.state === 'queued' ? (sent.raw.outbox as { error?: string | null }) : null;
      if (waiting) useUi.getState().toast({ kind: 'info', title: 'In the outbox: sent when the server can be reached', message: waiting.error ?? subject });
      else useUi.getState().toast({ kind: 'info', title: 'Message sent', message: subject || '(no subject)' });
      props.onSent();
      props.onClose();
    } catch (e) {
      sendingRef.current = false;
      setStatus({ kind: 'error', message: `Not sent: ${errorMessage(e)}` });
    }
  };

  /** × and Escape: a changed message asks first (Save draft / Discard / Cancel). */
  const requestClose = () => {
    if (unsaved) setConfirmClose(true);
    else {
      closing.current = true;
      props.onClose();
    }
  };
  const discard = async () => {
    closing.current = true;
    setConfirmClose(false);
    await saving.current;
    if (draftRef.current) await api.call('mail.delete', { account: props.account.id, id: draftRef.current }).catch(() => {});
    props.onSent();
    props.onClose();
  };

  const busy = status.kind === 'sending' || status.kind === 'saving';
  const title = init.mode === 'new' || init.mode === 'draft' ? 'New message' : init.mode === 'forward' ? 'Forward' : 'Reply';

  const pick = (value: string, set: (v: string) => void, p: MailPerson) => {
    const parts = value.split(/[,;]/);
    parts[parts.length - 1] = ` ${formatPerson(p)}`;
    set(parts.join(',').replace(/^\s+/, '') + ', ');
  };

  const recipientField = (label: string, key: 'to' | 'cc' | 'bcc', value: string, set: (v: string) => void, ref?: React.RefObject<HTMLInputElement | null>) => {
    const open = activeField === key && suggestions.length > 0;
    const current = Math.min(highlight, suggestions.length - 1);
    return (
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
            role="combobox"
            aria-expanded={open}
            aria-controls={open ? `compose-${key}-suggestions` : undefined}
            aria-activedescendant={open ? `compose-${key}-suggestion-${current}` : undefined}
            onChange={(e) => {
              set(e.target.value);
              setSuggestionsHidden(false);
            }}
            onKeyDown={(e) => {
              if (!open) return;
              // Arrows move through the suggestions, Enter (or Tab) takes one, Escape hides them.
              if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
                e.preventDefault();
                const n = suggestions.length;
                setHighlight((current + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
              } else if ((e.key === 'Enter' && !e.ctrlKey && !e.metaKey) || (e.key === 'Tab' && !e.shiftKey && lastToken.trim())) {
                e.preventDefault();
                pick(value, set, suggestions[current]!);
              } else if (e.key === 'Escape') {
                e.preventDefault();
                e.stopPropagation();
                setSuggestionsHidden(true);
              }
            }}
            onFocus={() => setActiveField(key)}
            onBlur={() => setTimeout(() => setActiveField((f) => (f === key ? null : f)), 150)}
            data-testid={`compose-${key}`}
          />
          {open && (
            <ul className="suggestions" role="listbox" id={`compose-${key}-suggestions`} data-testid="compose-suggestions">
              {suggestions.map((p, i) => (
                <li key={p.email} id={`compose-${key}-suggestion-${i}`} role="option" aria-selected={i === current} className={i === current ? 'active' : undefined}>
                  <button type="button" tabIndex={-1} onMouseDown={(e) => e.preventDefault()} onMouseEnter={() => setHighlight(i)} onClick={() => pick(value, set, p)}>
                    {formatPerson(p)}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
    );
  };

  return (
    <section
      className={`compose${dragOver ? ' drop-active' : ''}`}
      aria-label={title}
      role="dialog"
      data-testid="compose-window"
      data-draft-id={draftId ?? ''}
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
        if (e.key === 'Escape' && !confirmClose) {
          e.preventDefault();
          requestClose();
        }
      }}
    >
      <header className="compose-head">
        <h2>{title}</h2>
        <button type="button" className="icon-btn" aria-label="Close" onClick={requestClose} data-testid="compose-close">
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
        {loading ? (
          <div className="list-state" data-testid="compose-loading">
            <span className="spinner" aria-hidden="true" /> Quoting the message…
          </div>
        ) : rich ? (
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
              onInput={(e) => {
                lastRich.current = { html: e.currentTarget.innerHTML, text: e.currentTarget.innerText };
                setRichVersion((v) => v + 1);
              }}
            />
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
                data-testid="compose-attachment-remove"
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
            disabled={loading}
            onChange={(e) => {
              // Switching keeps the text: plain → rich carries the text over, rich → plain its visible text.
              if (!e.target.checked && richRef.current) setBody(richVersion === 0 && quoteText.current !== null ? quoteText.current : richRef.current.innerText);
              else richInit.current = textAsHtml(body);
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
        <button type="button" className="btn btn-ghost" onClick={() => void saveDraft()} disabled={busy || loading} data-testid="compose-save-draft">
          Save draft
        </button>
      </footer>
      {confirmClose && (
        <Dialog title="Save this message as a draft?" onClose={() => setConfirmClose(false)} testId="compose-confirm-close">
          <div className="dialog-body">Your changes have not been saved yet. A saved draft stays in Drafts, where you can open it again.</div>
          <div className="dialog-actions">
            <button type="button" className="btn" onClick={() => setConfirmClose(false)} data-testid="confirm-cancel">
              Cancel
            </button>
            <button type="button" className="btn btn-danger" onClick={() => void discard()} data-testid="confirm-discard">
              Discard
            </button>
            <button
              type="button"
              className="btn btn-primary"
              data-autofocus
              data-testid="confirm-save"
              onClick={async () => {
                setConfirmClose(false);
                if (await saveDraft()) {
                  closing.current = true;
                  props.onClose();
                }
              }}
            >
              Save draft
            </button>
          </div>
        </Dialog>
      )}
    </section>
  );
}
