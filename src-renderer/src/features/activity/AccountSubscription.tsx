/** One account's subscription: create (type, monitored resources), pause, resume, delete; the follower's state. */
import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { ActivitySubscription } from '../../../../src-main/contract/activity';
import { keys, useApi } from '../../api/hooks';
import { ConfirmDialog } from '../../components/Dialog';
import { formatDate } from '../../components/format';
import { ServiceIcon } from '../../components/Icons';
import { Name, named } from '../../components/Name';
import { toastError } from '../../stores/ui';
import './activity.css';

/** "watching", "polling every 60 s", "backing off (8 s)", "error": what the follower is doing. */
function followerState(status: { mode: string; intervalMs: number | null } | null): string {
  if (!status) return 'active';
  const every = status.intervalMs ? Math.round(status.intervalMs / 1000) : null;
  if (status.mode === 'polling' && every) return `polling every ${every} s`;
  if (status.mode === 'backing-off' && every) return `backing off (${every} s)`;
  return status.mode;
}

export function AccountSubscription(props: { account: Account; group?: string; mail: boolean; status: { mode: string; error: string | null; nextRunAt: string | null; intervalMs: number | null } | null }) {
  const api = useApi();
  const qc = useQueryClient();
  const { account } = props;
  const q = useQuery({ queryKey: [...keys.activity(account.id), 'subscriptions'], queryFn: () => api.call('activity.subscriptions.list', { account: account.id }) });
  const [type, setType] = useState<'changes' | 'crawl' | 'analytics'>('changes');
  const [resources, setResources] = useState('');
  const [confirm, setConfirm] = useState<ActivitySubscription | null>(null);
  const sub = q.data?.[0] ?? null;
  const refresh = () => qc.invalidateQueries({ queryKey: keys.activity(account.id) });
  const run = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      toastError(what, e);
    }
    await refresh();
    await qc.invalidateQueries({ queryKey: [...keys.activityGlobal, 'followers'] });
  };
  const types = props.mail ? (['changes', 'analytics'] as const) : (['changes', 'crawl'] as const);

  return (
    <li className="sub-card" data-testid="subscription" data-account={account.account} data-state={sub ? (sub.active ? 'active' : 'paused') : 'none'}>
      <div className="sub-head">
        <span className="account-icon">
          <ServiceIcon group={props.group} service={account.service} />
        </span>
        <strong>
          <Name value={account.account} />
        </strong>
        <span className="muted">{account.serviceName === account.account ? '' : account.serviceName}</span>
        {sub && (
          <span className={`pill ${sub.active ? 'pill-ok' : 'pill-muted'}`} data-testid="subscription-state">
            {sub.active ? followerState(props.status) : 'paused'}
          </span>
        )}
      </div>
      {q.error ? (
        <p className="form-status error">{q.error.message}</p>
      ) : sub ? (
        <>
          <dl className="sub-facts">
            <dt>Type</dt>
            <dd>{sub.subscriptionType}</dd>
            <dt>Monitoring</dt>
            <dd>{sub.monitoredResources.map((r) => (r.resource === 'root' ? 'everything' : r.resource)).join(', ') || '—'}</dd>
            <dt>Expires</dt>
            <dd>{formatDate(sub.expiry)}</dd>
            <dt>Cursor</dt>
            <dd className="mono" title={sub.lastCursor ?? undefined} data-testid="subscription-cursor">
              {sub.lastCursor ? `…${sub.lastCursor.slice(-10)}` : 'no activity yet'}
              {sub.lastCursorUpdatedAt ? ` · ${formatDate(sub.lastCursorUpdatedAt)}` : ''}
            </dd>
            {sub.disableReason && (
              <>
                <dt>Reason</dt>
                <dd>{sub.disableReason}</dd>
              </>
            )}
            {props.status?.error && (
              <>
                <dt>Error</dt>
                <dd className="error-text">{props.status.error}</dd>
              </>
            )}
          </dl>
          <div className="sub-actions">
            <button type="button" className="btn btn-small" onClick={() => void run('Could not change the subscription', () => api.call('activity.subscriptions.setActive', { account: account.id, id: sub.id, active: !sub.active }))} data-testid={sub.active ? 'subscription-pause' : 'subscription-resume'}>
              {sub.active ? 'Pause' : 'Resume'}
            </button>
            <button type="button" className="btn btn-small btn-ghost danger-text" onClick={() => setConfirm(sub)} data-testid="subscription-delete">
              Delete
            </button>
          </div>
        </>
      ) : (
        <form
          className="sub-create"
          onSubmit={(e) => {
            e.preventDefault();
            const monitored = resources
              .split(',')
              .map((r) => r.trim())
              .filter(Boolean)
              .map((resource) => ({ resource }));
            void run('Could not subscribe', () => api.call('activity.subscriptions.create', { account: account.id, subscriptionType: type, monitoredResources: monitored.length ? monitored : undefined }));
          }}
        >
          <select className="input input-small" value={type} onChange={(e) => setType(e.target.value as typeof type)} aria-label="Subscription type" data-testid="subscription-type">
            {types.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
          <input className="input input-small" placeholder={props.mail ? 'Folders (default INBOX)' : 'Folder ids (default: everything)'} value={resources} onChange={(e) => setResources(e.target.value)} aria-label="Monitored resources" />
          <button type="submit" className="btn btn-small btn-primary" data-testid="subscribe">
            Subscribe
          </button>
        </form>
      )}
      {confirm && (
        <ConfirmDialog
          title={named`Stop monitoring "${account.account}"?`}
          message={<p>The subscription and all its recorded activity are deleted.</p>}
          confirm="Delete subscription"
          danger
          onConfirm={() => {
            qc.removeQueries({ queryKey: [...keys.activity(account.id), 'stream'] });
            void run('Could not delete the subscription', () => api.call('activity.subscriptions.delete', { account: account.id, id: confirm.id }));
          }}
          onClose={() => setConfirm(null)}
        />
      )}
    </li>
  );
}
