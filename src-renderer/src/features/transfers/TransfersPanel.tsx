/**
 * Transfers: the main process's (desktop uploads and downloads, cross-account copies and moves,
 * from transfers.list + transfers.updated) and this page's own web uploads, with progress,
 * speed, ETA and the actions each one offers now: pause, resume, cancel, retry.
 */
import { useEffect, useState, type ReactNode } from 'react';
import type { Transfer, TransferAction } from '../../../../src-main/contract';
import { TRANSFER_VERB } from '../../../../src-main/contract/transfers';
import { useQueryClient } from '@tanstack/react-query';
import { keys, useApi, useTransfers } from '../../api/hooks';
import { formatBytes, formatDuration } from '../../components/format';
import { TransfersIcon } from '../../components/Icons';
import { Name, named, nameText, plain } from '../../components/Name';
import { toastError, useUi } from '../../stores/ui';
import { actOnWebUpload, forgetFinishedWebUploads } from './web-upload';
import './transfers.css';

interface Row {
  id: string;
  name: string;
  direction: Transfer['direction'];
  bytesDone: number;
  bytesTotal: number | null;
  state: string;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  speed: number;
  actions: TransferAction[];
  savedAs: string | null;
  act(action: TransferAction): void;
}

const PROCEDURE = { pause: 'transfers.pause', resume: 'transfers.resume', cancel: 'transfers.cancel', retry: 'transfers.retry' } as const;
const LABEL: Record<TransferAction, string> = { pause: 'Pause', resume: 'Resume', cancel: 'Cancel', retry: 'Retry' };

function useRows(): Row[] {
  const api = useApi();
  const server = useTransfers();
  const local = useUi((s) => s.uploads);
  // The page's own web uploads are only here: the server does not record them as transfers.
  const rows: Row[] = [
    ...(server.data ?? []).map((t) => ({
      ...t,
      startedAt: Date.parse(t.startedAt),
      finishedAt: t.finishedAt ? Date.parse(t.finishedAt) : null,
      act: (action: TransferAction) => {
        if (action === 'cancel') useUi.getState().requestCancel(t.id, t.name, t.direction);
        void api.call(PROCEDURE[action], { id: t.id }).catch((e) => {
          if (action === 'cancel') forgetCancel(t.id);
          toastError(named`Could not ${plain(action)} "${t.name}"`, e);
        });
      },
    })),
    ...local.map((u) => ({
      ...u,
      direction: 'upload' as const,
      act: (action: TransferAction) => {
        if (action === 'cancel') useUi.getState().requestCancel(u.id, u.name, 'upload');
        actOnWebUpload(u.id, action);
      },
    })),
  ];
  return rows.sort((a, b) => b.startedAt - a.startedAt);
}

/** A cancel that could not be made: the row offers its buttons again. */
function forgetCancel(id: string): void {
  useUi.setState((s) => {
    const rest = { ...s.cancelling };
    delete rest[id];
    return { cancelling: rest };
  });
}

/** Moving bytes now (the badge counts these); a paused one is neither active nor finished. */
const isActive = (r: Row) => r.state === 'running' || r.state === 'queued';

export function TransfersButton() {
  const rows = useRows();
  const open = useUi((s) => s.transfersOpen);
  const setOpen = useUi((s) => s.setTransfersOpen);
  const active = rows.filter(isActive).length;
  return (
    <button type="button" className={`btn btn-ghost transfers-btn${open ? ' pressed' : ''}`} aria-pressed={open} aria-controls="transfers-panel" onClick={() => setOpen(!open)} data-testid="transfers-toggle">
      <TransfersIcon /> Transfers
      {active > 0 && (
        <span className="badge" data-testid="transfers-badge" aria-label={`${active} active`}>
          {active}
        </span>
      )}
    </button>
  );
}

export function TransfersPanel() {
  const api = useApi();
  const qc = useQueryClient();
  const rows = useRows();
  const open = useUi((s) => s.transfersOpen);
  const setOpen = useUi((s) => s.setTransfersOpen);
  const clearLocal = useUi((s) => s.clearFinishedUploads);
  const [, tick] = useState(0);
  const anyActive = rows.some(isActive);
  // Re-render once a second while something runs so speed and ETA stay current.
  useEffect(() => {
    if (!anyActive || !open) return;
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [anyActive, open]);
  if (!open) return null;

  const clear = async () => {
    clearLocal();
    forgetFinishedWebUploads();
    try {
      await api.call('transfers.clearFinished', {});
      // The main process emits no event for clearing: refetch its list.
      const list = await api.call('transfers.list', {});
      qc.setQueryData(keys.transfers, list);
    } catch (e) {
      toastError('Could not clear transfers', e);
    }
  };

  return (
    <section id="transfers-panel" className="transfers" aria-label="Transfers" data-testid="transfers-panel">
      <header className="transfers-head">
        <h2>Transfers</h2>
        <div className="transfers-head-actions">
          <button type="button" className="btn btn-ghost btn-small" onClick={() => void clear()} disabled={!rows.some((r) => r.finishedAt !== null)} data-testid="transfers-clear">
            Clear finished
          </button>
          <button type="button" className="icon-btn" aria-label="Close transfers" onClick={() => setOpen(false)}>
            ×
          </button>
        </div>
      </header>
      {rows.length === 0 ? (
        <p className="transfers-empty">No transfers yet.</p>
      ) : (
        <ul className="transfer-list">
          {rows.map((r) => (
            <TransferRow key={r.id} row={r} />
          ))}
        </ul>
      )}
    </section>
  );
}

function TransferRow({ row: r }: { row: Row }) {
  const ended = r.state === 'done' || r.state === 'failed' || r.state === 'cancelled';
  // Asked to cancel: said until the transfer has really stopped.
  const cancelling = useUi((s) => !ended && s.cancelling[r.id] !== undefined);
  // Running with no byte counted yet: how far it is is not known, so nothing is claimed.
  const starting = r.state === 'running' && r.bytesDone === 0 && r.bytesTotal !== 0;
  // Until the destination confirms, a transfer is not complete even when every byte was sent.
  const pct = r.state === 'done' ? 100 : starting ? null : r.bytesTotal ? Math.min(r.state === 'running' ? 99 : 100, (r.bytesDone / r.bytesTotal) * 100) : null;
  const eta = r.bytesTotal && r.speed > 0 ? (r.bytesTotal - r.bytesDone) / r.speed : NaN;
  const verb = TRANSFER_VERB[r.direction];
  const amount = `${formatBytes(r.bytesDone)}${r.bytesTotal !== null ? ` of ${formatBytes(r.bytesTotal)}` : ''}`;
  let detail: ReactNode;
  if (cancelling) detail = 'Cancelling…';
  else if (starting) detail = `Starting…${r.bytesTotal !== null ? ` · ${formatBytes(r.bytesTotal)}` : ''}`;
  else if (r.state === 'running' && r.bytesTotal !== null && r.bytesTotal > 0 && r.bytesDone >= r.bytesTotal) detail = `${amount} · waiting for the server to confirm`;
  else if (r.state === 'running') detail = `${amount}${r.speed > 0 ? ` · ${formatBytes(r.speed)}/s` : ''}${Number.isFinite(eta) ? ` · ${formatDuration(eta)} left` : ''}`;
  else if (r.state === 'paused') detail = `Paused · ${amount}`;
  else if (r.state === 'done') detail = named`${plain(`Done · ${formatBytes(r.bytesTotal ?? r.bytesDone)}${r.finishedAt ? ` in ${formatDuration((r.finishedAt - r.startedAt) / 1000)}` : ''}`)}${r.savedAs ? named` · Saved as ${r.savedAs}` : plain('')}`;
  else if (r.state === 'failed') detail = r.error ? nameText(r.error) : 'Failed';
  else detail = r.state.charAt(0).toUpperCase() + r.state.slice(1);
  const label = nameText(r.name);
  return (
    <li className={`transfer state-${r.state}`} data-testid="transfer-row" data-name={r.name} data-state={r.state} data-done={r.bytesDone} data-total={r.bytesTotal ?? undefined} data-saved-as={r.savedAs ?? undefined}>
      <div className="transfer-line">
        <span className="transfer-name" title={label}>
          <span className="transfer-kind">{verb}</span> <Name value={r.name} />
        </span>
        <span className="transfer-actions">
          {cancelling ? (
            <button type="button" className="btn btn-ghost btn-small" disabled aria-label={`Cancelling ${label}`} data-testid="transfer-cancel">
              Cancelling…
            </button>
          ) : (
            r.actions.map((a) => (
              <button key={a} type="button" className="btn btn-ghost btn-small" onClick={() => r.act(a)} aria-label={`${LABEL[a]} ${label}`} data-testid={`transfer-${a}`}>
                {LABEL[a]}
              </button>
            ))
          )}
        </span>
      </div>
      <div className="progress" role="progressbar" aria-label={`${verb} ${label}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct === null ? undefined : Math.round(pct)}>
        <div className={`progress-fill${pct === null ? ' indeterminate' : ''}`} style={{ width: pct === null ? '30%' : `${pct}%` }} />
      </div>
      <div className={`transfer-detail${r.state === 'failed' ? ' error' : ''}`}>{detail}</div>
    </li>
  );
}
