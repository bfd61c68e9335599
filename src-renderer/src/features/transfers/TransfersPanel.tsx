/**
 * Transfers: the main process's (Electron uploads and downloads, cross-account copies and
 * moves, from transfers.list + transfers.updated) and this page's own web uploads, with
 * progress, speed, ETA and cancel.
 */
import { useEffect, useState } from 'react';
import type { Transfer } from '../../../../src-main/contract';
import { useQueryClient } from '@tanstack/react-query';
import { keys, useApi, useTransfers } from '../../api/hooks';
import { formatBytes, formatDuration } from '../../components/format';
import { TransfersIcon } from '../../components/Icons';
import { toastError, useUi } from '../../stores/ui';

interface Row {
  id: string;
  name: string;
  direction: string;
  bytesDone: number;
  bytesTotal: number | null;
  state: string;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  cancel?: () => void;
}

function useRows(): Row[] {
  const api = useApi();
  const server = useTransfers();
  const local = useUi((s) => s.uploads);
  // The headless server also records each web upload as its own transfer; the page's row
  // (with XHR progress and a working cancel) stands for it, so that twin is hidden.
  const twin = (t: Transfer) =>
    t.direction === 'upload' && local.some((u) => u.name === t.name && u.account === t.account && u.target === t.target && Date.parse(t.startedAt) >= u.startedAt - 5000);
  const rows: Row[] = [
    ...(server.data ?? []).filter((t) => !twin(t)).map((t) => ({
      id: t.id,
      name: t.name,
      direction: t.direction,
      bytesDone: t.bytesDone,
      bytesTotal: t.bytesTotal,
      state: t.state,
      error: t.error,
      startedAt: Date.parse(t.startedAt),
      finishedAt: t.finishedAt ? Date.parse(t.finishedAt) : null,
      cancel:
        t.state === 'running' || t.state === 'queued'
          ? () => api.call('transfers.cancel', { id: t.id }).catch((e) => toastError('Could not cancel', e))
          : undefined,
    })),
    ...local.map((u) => ({ ...u, direction: 'upload', cancel: u.state === 'running' ? u.abort : undefined })),
  ];
  return rows.sort((a, b) => b.startedAt - a.startedAt);
}

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
          <button type="button" className="btn btn-ghost btn-small" onClick={() => void clear()} disabled={!rows.some((r) => !isActive(r))} data-testid="transfers-clear">
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
  const now = r.finishedAt ?? Date.now();
  const seconds = Math.max((now - r.startedAt) / 1000, 0.001);
  const speed = r.bytesDone / seconds;
  const pct = r.state === 'done' ? 100 : r.bytesTotal ? Math.min(100, (r.bytesDone / r.bytesTotal) * 100) : null;
  const eta = r.bytesTotal && speed > 0 ? (r.bytesTotal - r.bytesDone) / speed : NaN;
  const verb = { upload: 'Upload', download: 'Download', copy: 'Copy', move: 'Move' }[r.direction] ?? r.direction;
  let detail: string;
  if (r.state === 'running') detail = `${formatBytes(r.bytesDone)}${r.bytesTotal ? ` of ${formatBytes(r.bytesTotal)}` : ''} · ${formatBytes(speed)}/s${Number.isFinite(eta) ? ` · ${formatDuration(eta)} left` : ''}`;
  else if (r.state === 'done') detail = `Done · ${formatBytes(r.bytesTotal ?? r.bytesDone)}`;
  else if (r.state === 'failed') detail = r.error ?? 'Failed';
  else detail = r.state.charAt(0).toUpperCase() + r.state.slice(1);
  return (
    <li className={`transfer state-${r.state}`} data-testid="transfer-row" data-name={r.name} data-state={r.state}>
      <div className="transfer-line">
        <span className="transfer-name" title={r.name}>
          <span className="transfer-kind">{verb}</span> {r.name}
        </span>
        {r.cancel && (
          <button type="button" className="btn btn-ghost btn-small" onClick={r.cancel} aria-label={`Cancel ${r.name}`}>
            Cancel
          </button>
        )}
      </div>
      <div className="progress" role="progressbar" aria-label={`${verb} ${r.name}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct === null ? undefined : Math.round(pct)}>
        <div className={`progress-fill${pct === null ? ' indeterminate' : ''}`} style={{ width: pct === null ? '30%' : `${pct}%` }} />
      </div>
      <div className={`transfer-detail${r.state === 'failed' ? ' error' : ''}`}>{detail}</div>
    </li>
  );
}
