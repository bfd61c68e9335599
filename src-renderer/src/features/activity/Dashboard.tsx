/**
 * The activity dashboard (issue 6): per account its subscription (create, pause, resume,
 * delete; type and monitored resources) and follower state, a live stream of activity
 * (pushed `activity.appended` events fetch what is new after the last cursor), webhooks with
 * their delivery attempts, and the track-activity setting.
 */
import { useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useQueries, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { ActivityItem, ActivitySubscription } from '../../../../src-main/contract/activity';
import { v2Event } from '../../../../src-main/contract/activity-v2';
import type { Api } from '../../api/client';
import { errorMessage } from '../../api/client';
import { keys, useAccounts, useApi, useConnectors } from '../../api/hooks';
import { ConfirmDialog } from '../../components/Dialog';
import { formatDate } from '../../components/format';
import { ServiceIcon } from '../../components/Icons';
import { toastError, useUi } from '../../stores/ui';

const STREAM_KEEP = 500;

interface Stream {
  items: ActivityItem[];
  cursor: string | null;
}

/** Reads only what is new since the last cursor and appends it (newest kept, STREAM_KEEP at most). */
async function readStream(api: Api, qc: QueryClient, account: number): Promise<Stream> {
  const prev = qc.getQueryData<Stream>([...keys.activity(account), 'stream']);
  let cursor = prev?.cursor ?? null;
  let items = prev?.items ?? [];
  for (let i = 0; i < 10; i++) {
    const page = await api.call('activity.list', { account, cursor, pageSize: 1000 });
    const known = new Set(items.map((x) => x.seq));
    items = [...items, ...page.items.filter((x) => !known.has(x.seq))];
    if (page.cursor === cursor || page.items.length < 1000) {
      cursor = page.cursor ?? cursor;
      break;
    }
    cursor = page.cursor;
  }
  return { items: items.slice(-STREAM_KEEP), cursor };
}

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/** Today: the time to the second; earlier: the day (the full date is in the tooltip). */
function streamTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return d.toDateString() === new Date().toDateString() ? clock.format(d) : day.format(d);
}

const baseName = (path: string) => path.replace(/\/+$/, '').split('/').pop() || path;

export function ActivityDashboard() {
  const api = useApi();
  const qc = useQueryClient();
  const accounts = useAccounts();
  const connectors = useConnectors();
  const list = accounts.data ?? [];
  const settings = useQuery({ queryKey: [...keys.activityGlobal, 'settings'], queryFn: () => api.call('activity.settings.get', {}) });
  const followers = useQuery({ queryKey: [...keys.activityGlobal, 'followers'], queryFn: () => api.call('activity.followers', {}) });
  const kindOf = (service: string) => connectors.data?.find((c) => c.id === service);

  return (
    <section className="dashboard" aria-label="Activity" data-testid="activity-dashboard">
      <div className="toolbar">
        <h1 className="dashboard-title">Activity</h1>
        <label className="track-setting">
          <input
            type="checkbox"
            checked={settings.data?.trackActivity ?? false}
            disabled={!settings.data}
            onChange={async (e) => {
              try {
                const next = await api.call('activity.settings.set', { trackActivity: e.target.checked });
                qc.setQueryData([...keys.activityGlobal, 'settings'], next);
              } catch (err) {
                toastError('Could not change the setting', err);
              }
            }}
            data-testid="track-activity"
          />
          Track activity of newly connected accounts
        </label>
      </div>
      <div className="dashboard-body">
        <div className="dashboard-col">
          <h2 className="section-title">Subscriptions</h2>
          {accounts.isLoading && <p className="muted">Loading…</p>}
          <ul className="sub-list">
            {list.map((a) => (
              <AccountSubscription
                key={a.id}
                account={a}
                group={kindOf(a.service)?.group}
                mail={kindOf(a.service)?.kind === 'mail'}
                status={followers.data?.find((f) => f.account === a.id) ?? null}
              />
            ))}
          </ul>
          <Webhooks applicationId={settings.data?.applicationId ?? ''} accounts={list} />
        </div>
        <div className="dashboard-col dashboard-stream">
          <h2 className="section-title">Live activity</h2>
          <ActivityStream accounts={list} />
        </div>
      </div>
    </section>
  );
}

/** "watching", "polling every 60 s", "backing off (8 s)", "error": what the follower is doing. */
function followerState(status: { mode: string; intervalMs: number | null } | null): string {
  if (!status) return 'active';
  const every = status.intervalMs ? Math.round(status.intervalMs / 1000) : null;
  if (status.mode === 'polling' && every) return `polling every ${every} s`;
  if (status.mode === 'backing-off' && every) return `backing off (${every} s)`;
  return status.mode;
}

function AccountSubscription(props: { account: Account; group?: string; mail: boolean; status: { mode: string; error: string | null; nextRunAt: string | null; intervalMs: number | null } | null }) {
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
        <strong>{account.account}</strong>
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
          title={`Stop monitoring "${account.account}"?`}
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

const ROW_HEIGHT = 34;
const CHART_MINUTES = 30;
type StreamRow = ActivityItem & { accountName: string };

function ActivityStream({ accounts }: { accounts: Account[] }) {
  const api = useApi();
  const qc = useQueryClient();
  const streams = useQueries({
    queries: accounts.map((a) => ({ queryKey: [...keys.activity(a.id), 'stream'], queryFn: () => readStream(api, qc, a.id), staleTime: Infinity, retry: false })),
  });
  const rows = useMemo(() => {
    const all: StreamRow[] = [];
    streams.forEach((s, i) => s.data?.items.forEach((x) => all.push({ ...x, accountName: accounts[i].account })));
    return all.sort((a, b) => b.recordedAt.localeCompare(a.recordedAt) || b.seq - a.seq).slice(0, STREAM_KEEP);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [streams.map((s) => s.dataUpdatedAt).join(','), accounts]);

  // Filters: by account, by event type, by text in the target's name or path.
  const [accountFilter, setAccountFilter] = useState('');
  const [typeFilter, setTypeFilter] = useState('');
  const [text, setText] = useState('');
  const shown = useMemo(() => {
    const needle = text.trim().toLowerCase();
    return rows.filter(
      (r) =>
        (!accountFilter || String(r.account) === accountFilter) &&
        (!typeFilter || v2Event(r).type === typeFilter || r.type === typeFilter) &&
        (!needle || r.path.toLowerCase().includes(needle) || (r.previousPath ?? '').toLowerCase().includes(needle)),
    );
  }, [rows, accountFilter, typeFilter, text]);

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: shown.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 10 });

  /** Opens what the activity is about: the folder holding a file (selected), a folder, a mailbox. */
  const openTarget = async (r: StreamRow) => {
    const ui = useUi.getState();
    try {
      if (r.kind === 'message' || !r.resourceId) return ui.open(r.account);
      if (r.kind === 'folder') return ui.open(r.account, r.resourceId);
      const file = await api.call('files.get', { account: r.account, id: r.resourceId });
      ui.open(r.account, file.parent?.id ?? 'root');
      ui.setSelection([file.id]);
    } catch (e) {
      toastError('Cannot open it', errorMessage(e));
    }
  };

  if (!rows.length) return <p className="muted stream-empty">No activity yet. Subscribe an account, then change something in it.</p>;
  return (
    <>
      <ActivityChart rows={shown} />
      <div className="stream-filters" role="group" aria-label="Filter the activity">
        <select className="input input-small" value={accountFilter} onChange={(e) => setAccountFilter(e.target.value)} aria-label="Account" data-testid="stream-filter-account">
          <option value="">All accounts</option>
          {accounts.map((a) => (
            <option key={a.id} value={String(a.id)}>
              {a.account}
            </option>
          ))}
        </select>
        <select className="input input-small" value={typeFilter} onChange={(e) => setTypeFilter(e.target.value)} aria-label="Event type" data-testid="stream-filter-type">
          <option value="">All events</option>
          {['add', 'update', 'delete', 'rename', 'move', 'copy', 'restore', 'access'].map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <input className="input input-small" type="search" placeholder="Name or path" value={text} onChange={(e) => setText(e.target.value)} aria-label="Name or path" data-testid="stream-filter-text" />
        <span className="muted small" data-testid="stream-count">
          {shown.length === rows.length ? `${rows.length} events` : `${shown.length} of ${rows.length} events`}
        </span>
      </div>
      <div className="stream-head" aria-hidden="true">
        <span>Time</span>
        <span>Account</span>
        <span>Event</span>
        <span>Target</span>
      </div>
      <div className="stream-scroll" ref={scrollRef} data-testid="activity-stream" role="list" aria-label="Activity">
        <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
          {virtual.getVirtualItems().map((v) => {
            const r = shown[v.index]!;
            const v2 = v2Event(r);
            return (
              <button
                type="button"
                role="listitem"
                key={`${r.account}-${r.seq}`}
                className="stream-row"
                style={{ position: 'absolute', top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${v.start}px)` }}
                onClick={() => void openTarget(r)}
                title={r.resourceId || r.kind === 'message' ? 'Open' : undefined}
                data-testid="activity-row"
                data-type={v2.type}
                data-subtype={v2.subtype ?? ''}
                data-name={baseName(r.path)}
              >
                <span className="stream-time" title={formatDate(r.occurredAt ?? r.recordedAt)}>
                  {streamTime(r.occurredAt ?? r.recordedAt)}
                </span>
                <span className="stream-account">{r.accountName}</span>
                <span>
                  <span className={`pill pill-${v2.type}`}>
                    {v2.category} · {v2.type}
                    {v2.subtype ? ` · ${v2.subtype}` : ''}
                  </span>
                </span>
                <span className="stream-target" title={r.previousPath ? `${r.previousPath} → ${r.path}` : r.path}>
                  <strong>{baseName(r.path)}</strong> <span className="muted">{r.previousPath ? `${r.previousPath} → ${r.path}` : r.path}</span>
                </span>
              </button>
            );
          })}
        </div>
      </div>
    </>
  );
}

/** Events per minute over the last half hour, from what the stream holds (filters applied). */
function ActivityChart({ rows }: { rows: StreamRow[] }) {
  const now = Math.floor(Date.now() / 60_000);
  const counts = Array.from({ length: CHART_MINUTES }, () => 0);
  for (const r of rows) {
    const age = now - Math.floor(Date.parse(r.occurredAt ?? r.recordedAt) / 60_000);
    if (age >= 0 && age < CHART_MINUTES) counts[CHART_MINUTES - 1 - age]++;
  }
  const max = Math.max(1, ...counts);
  const total = counts.reduce((a, b) => a + b, 0);
  const w = 8;
  return (
    <figure className="activity-chart" data-testid="activity-chart" data-total={total}>
      <svg width={CHART_MINUTES * (w + 2)} height={40} role="img" aria-label={`${total} events in the last ${CHART_MINUTES} minutes`}>
        {counts.map((c, i) => (
          <rect key={i} x={i * (w + 2)} y={40 - (c / max) * 38} width={w} height={(c / max) * 38 || 1} rx={1.5} className={c ? 'bar' : 'bar-empty'}>
            <title>{`${c} event${c === 1 ? '' : 's'}, ${CHART_MINUTES - 1 - i} min ago`}</title>
          </rect>
        ))}
      </svg>
      <figcaption className="muted small">Events per minute, last {CHART_MINUTES} minutes</figcaption>
    </figure>
  );
}

function Webhooks({ applicationId, accounts }: { applicationId: string; accounts: Account[] }) {
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
          {accounts.map((a) => (
            <option key={a.id} value={a.id}>
              {a.account}
            </option>
          ))}
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
              {w.format} · {w.account ? (accounts.find((a) => a.id === w.account)?.account ?? `account ${w.account}`) : 'all accounts'}
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
