/** Webhooks: add one (after its test POST), their state, next retry and last delivery attempts; delete. */
import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import { errorMessage } from '../../api/client';
import { keys, useApi } from '../../api/hooks';
import { AccountOptions } from '../../components/AccountOptions';
import { formatDate } from '../../components/format';
import { Name } from '../../components/Name';
import { toastError } from '../../stores/ui';
import './activity.css';

export function Webhooks({ applicationId, accounts }: { applicationId: string; accounts: Account[] }) {
  const api = useApi();
  const qc = useQueryClient();
  const hooks = useQuery({ queryKey: [...keys.activityGlobal, 'webhooks'], queryFn: () => api.call('activity.webhooks.list', {}), refetchInterval: 5000 });
  const [url, setUrl] = useState('');
  const [format, setFormat] = useState<'json' | 'form'>('json');
  const [scope, setScope] = useState('');
  const [status, setStatus] = useState<{ kind: 'idle' | 'busy' } | { kind: 'ok' | 'error'; message: string }>({ kind: 'idle' });
  const refresh = () => qc.invalidateQueries({ queryKey: [...keys.activityGlobal, 'webhooks'] });

  return (
    <div className="webhooks" data-testid="webhooks">
      <h2 className="section-title">Webhooks</h2>
      <p className="muted small">
        A new webhook receives a test POST of <code>{'{}'}</code> and must answer 200 with the application id <code data-testid="application-id">{applicationId}</code>.
      </p>
      <form
        className="webhook-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setStatus({ kind: 'busy' });
          try {
            await api.call('activity.webhooks.create', { url, format, account: scope ? Number(scope) : null });
            setStatus({ kind: 'ok', message: 'The test POST was answered correctly: webhook saved.' });
            setUrl('');
          } catch (err) {
            setStatus({ kind: 'error', message: errorMessage(err) });
          }
          await refresh();
        }}
      >
        <input className="input input-small webhook-url" type="url" required placeholder="https://example.com/hook" value={url} onChange={(e) => setUrl(e.target.value)} aria-label="Webhook URL" data-testid="webhook-url" />
        <select className="input input-small" value={format} onChange={(e) => setFormat(e.target.value as 'json' | 'form')} aria-label="Format">
          <option value="json">JSON</option>
          <option value="form">form (legacy)</option>
        </select>
        <select className="input input-small" value={scope} onChange={(e) => setScope(e.target.value)} aria-label="Accounts">
          <option value="">All accounts</option>
          <AccountOptions accounts={accounts} />
        </select>
        <button type="submit" className="btn btn-small btn-primary" disabled={status.kind === 'busy'} data-testid="webhook-create">
          {status.kind === 'busy' ? 'Testing…' : 'Add'}
        </button>
      </form>
      {(status.kind === 'ok' || status.kind === 'error') && (
        <div className={`form-status ${status.kind}`} role={status.kind === 'error' ? 'alert' : 'status'} data-testid="webhook-status">
          {status.message}
        </div>
      )}
      <ul className="webhook-list">
        {hooks.data?.map((w) => (
          <li key={w.id} className="webhook" data-testid="webhook" data-url={w.url}>
            <div className="webhook-head">
              <code className="webhook-url-text">{w.url}</code>
              <span className={`pill ${w.paused ? 'pill-muted' : w.failingSince ? 'pill-bad' : 'pill-ok'}`}>{w.paused ? 'paused' : w.failingSince ? 'failing' : 'ok'}</span>
              <button
                type="button"
                className="btn btn-small btn-ghost danger-text"
                onClick={async () => {
                  try {
                    await api.call('activity.webhooks.delete', { id: w.id });
                  } catch (e) {
                    toastError('Could not delete the webhook', e);
                  }
                  await refresh();
                }}
                data-testid="webhook-delete"
              >
                Delete
              </button>
            </div>
            <div className="muted small">
              {w.format} · {w.account ? <Name value={accounts.find((a) => a.id === w.account)?.account ?? `account ${w.account}`} /> : 'all accounts'}
              {w.nextAttemptAt && ` · next retry ${formatDate(w.nextAttemptAt)}`}
            </div>
            {w.lastAttempts.length > 0 && (
              <ul className="attempts" aria-label="Delivery attempts">
                {w.lastAttempts.slice(0, 5).map((d) => (
                  <li key={d.id} className={d.ok ? 'ok' : 'bad'} data-testid="webhook-attempt" data-kind={d.kind}>
                    {formatDate(d.at)} · {d.kind} · {d.status ?? '—'} {d.error ? `· ${d.error}` : ''} · {Math.round(d.durationMs)} ms
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
