/**
 * The outbox entry of the folder list: shown while messages wait, are being sent, failed, or are
 * sent with their copy to Sent still pending (docs/mail.md, The outbox). Opening it lists them,
 * with the reason of the last failure and the time of the next attempt; a waiting or failed
 * message can be sent now or cancelled. Refreshed when the outbox changes (mail.outboxChanged),
 * with the account's mail lists (mail.changed), and every 2 s while it is not empty (the times
 * of the next attempt).
 */
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { OutboxItem } from '../../../../src-main/contract/mail';
import { keys, useApi } from '../../api/hooks';
import { SendIcon } from '../../components/Icons';
import { toastError } from '../../stores/ui';

const time = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

function describe(i: OutboxItem): string {
  if (i.state === 'sending') return 'Sending…';
  if (i.state === 'failed') return 'Not sent';
  if (i.state === 'sent') return i.copy === 'failed' ? 'Sent; no copy in Sent' : 'Sent; copying to Sent…';
  if (i.attempts > 0 && i.nextAttemptAt) return `Waiting to retry at ${time(i.nextAttemptAt)}`;
  return `Sends at ${time(i.sendAt)}`;
}

export function OutboxEntry({ account }: { account: number }) {
  const api = useApi();
  const [open, setOpen] = useState(false);
  const q = useQuery({
    queryKey: [...keys.mail(account), 'outbox'],
    queryFn: () => api.call('mail.outbox', { account }),
    refetchInterval: (query) => (query.state.data?.length ? 2000 : false),
  });
  const items = q.data ?? [];
  if (!items.length) return null;
  const act = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      toastError(what, e);
    }
    await q.refetch();
  };
  return (
    <div className="mail-outbox" data-testid="mail-outbox">
      <button type="button" className={`mail-folder${open ? ' active' : ''}`} aria-expanded={open} onClick={() => setOpen(!open)} data-testid="mail-outbox-toggle">
        <span className="mail-folder-icon" aria-hidden="true">
          <SendIcon />
        </span>
        <span className="mail-folder-name">Outbox</span>
        <span className="mail-unread" aria-label={`${items.length} in the outbox`}>
          {items.length}
        </span>
      </button>
      {open && (
        <ul className="mail-outbox-items" aria-label="Outbox">
          {items.map((i) => (
            <li key={i.id} className="mail-outbox-item" data-testid="mail-outbox-item" data-state={i.state} data-subject={i.subject}>
              <div className="mail-outbox-subject">{i.subject || '(no subject)'}</div>
              <div className="mail-outbox-meta">
                {describe(i)} · to {i.recipients.join(', ')}
              </div>
              {i.error && (
                <div className="mail-outbox-error" data-testid="mail-outbox-error">
                  {i.error}
                </div>
              )}
              {(i.state === 'queued' || i.state === 'failed') && (
                <div className="mail-outbox-actions">
                  <button type="button" className="btn btn-small" onClick={() => void act('Could not send', () => api.call('mail.sendQueuedNow', { account, id: i.id }))} data-testid="mail-outbox-send-now">
                    Send now
                  </button>
                  <button type="button" className="btn btn-small" onClick={() => void act('Could not cancel', () => api.call('mail.cancelQueued', { account, id: i.id }))} data-testid="mail-outbox-cancel">
                    Cancel
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
