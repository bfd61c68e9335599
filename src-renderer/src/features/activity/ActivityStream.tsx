/**
 * The live stream of every account's activity: pushed `activity.appended` events fetch what is
 * new after the last cursor; filters by account, event type and text; a virtualized list whose
 * rows open what the activity is about.
 */
import { useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useQueries, useQueryClient, type QueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import type { ActivityItem } from '../../../../src-main/contract/activity';
import { v2Event } from '../../../../src-main/contract/activity-v2';
import type { Api } from '../../api/client';
import { errorMessage } from '../../api/client';
import { keys, useApi } from '../../api/hooks';
import { formatDate } from '../../components/format';
import { Name, nameText } from '../../components/Name';
import { toastError, useUi } from '../../stores/ui';
import { ActivityChart } from './ActivityChart';
import './activity.css';

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

const ROW_HEIGHT = 34;
type StreamRow = ActivityItem & { accountName: string };

export function ActivityStream({ accounts }: { accounts: Account[] }) {
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
              {nameText(a.account)}
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
                <span className="stream-time" title={formatDate(r.recordedAt)}>
                  {streamTime(r.recordedAt)}
                </span>
                <span className="stream-account">
                  <Name value={r.accountName} />
                </span>
                <span>
                  <span className={`pill pill-${v2.type}`}>
                    {v2.category} · {v2.type}
                    {v2.subtype ? ` · ${v2.subtype}` : ''}
                  </span>
                </span>
                <span className="stream-target" title={r.previousPath ? `${nameText(r.previousPath)} → ${nameText(r.path)}` : nameText(r.path)}>
                  <strong>
                    <Name value={baseName(r.path)} />
                  </strong>{' '}
                  <span className="muted">
                    {r.previousPath ? (
                      <>
                        <Name value={r.previousPath} /> → <Name value={r.path} />
                      </>
                    ) : (
                      <Name value={r.path} />
                    )}
                  </span>
                </span>
              </button>
            );
          })}
        </div>
      </div>
    </>
  );
}
