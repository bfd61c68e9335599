/**
 * The Sync view (docs/sync.md): sync pairs with their state (up to date / syncing N / paused /
 * error / waiting for you / N conflicts), adding a pair, the folders of a pair ticked in or out
 * (selective sync), and the conflicts list with Keep mine / Keep theirs / Keep both.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { SyncConflict, SyncPair } from '../../../../src-main/contract';
import { useAccounts, useApi, useAppInfo, useStorageAccounts } from '../../api/hooks';
import { AccountOptions } from '../../components/AccountOptions';
import { FolderPicker } from '../../components/FolderPicker';
import { Name } from '../../components/Name';
import { SecondsSetting } from '../../components/SecondsSetting';
import { toastError } from '../../stores/ui';
import { conflictsText, stateText } from './state-text';
import './sync.css';

export const syncKeys = { all: ['sync'] as const };

const under = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/** The pair's folders with a tick each: unticked folders (and what is inside) are not synced. */
function PairFolders({ pair, onChanged }: { pair: SyncPair; onChanged: () => Promise<void> }) {
  const api = useApi();
  const folders = useQuery({ queryKey: [...syncKeys.all, 'folders', pair.id, pair.excluded.join('|')], queryFn: () => api.call('sync.pairs.folders', { id: pair.id }) });
  // The ticks show the change at once; the pair's list replaces them once the engine has it.
  const [shown, setShown] = useState<string[] | null>(null);
  const current = shown ?? pair.excluded;
  const set = async (folder: string, synced: boolean) => {
    // Ticking a folder in takes it off the list; ticking it out replaces the folders below it.
    const excluded = synced ? current.filter((e) => e !== folder) : [...current.filter((e) => !under(e, folder)), folder];
    setShown(excluded);
    try {
      await api.call('sync.pairs.update', { id: pair.id, excluded });
    } catch (e) {
      toastError('Could not change the synced folders', e);
    }
    await onChanged();
    setShown(null);
  };
  if (!folders.data) return <p className="muted">Loading folders…</p>;
  if (folders.data.length === 0) return <p className="muted" data-testid="sync-folders">No folders in this pair yet.</p>;
  return (
    <ul className="sync-folders" data-testid="sync-folders" aria-label="Synced folders">
      {folders.data.map((f) => {
        const own = current.includes(f);
        const inherited = !own && current.some((e) => under(f, e));
        if (inherited) return null; // inside an unticked folder: follows it
        const depth = f.split('/').length - 2;
        return (
          <li key={f} style={{ paddingLeft: `${depth * 18}px` }}>
            <label>
              <input type="checkbox" checked={!own} disabled={shown !== null} onChange={(e) => void set(f, e.target.checked)} data-testid="sync-folder" data-path={f} />
              {f.slice(f.lastIndexOf('/') + 1)}
              {own && <span className="muted"> — not synced; the copies on both sides stay as they are</span>}
            </label>
          </li>
        );
      })}
    </ul>
  );
}

/** How often servers that cannot announce changes are looked at (setting `sync.remotePollSeconds`). */
function RemotePollSetting() {
  const api = useApi();
  const qc = useQueryClient();
  const current = useQuery({ queryKey: [...syncKeys.all, 'settings'], queryFn: () => api.call('sync.settings.get', {}) });
  return (
    <SecondsSetting
      id="sync-poll-seconds"
      className="sync-setting"
      label="Look for changes on servers that cannot announce them every"
      seconds={current.data?.remotePollSeconds}
      title="Sync"
      testId="sync-poll-seconds"
      save={async (remotePollSeconds) => {
        try {
          await api.call('sync.settings.set', { remotePollSeconds });
        } finally {
          void qc.invalidateQueries({ queryKey: [...syncKeys.all, 'settings'] });
        }
      }}
    />
  );
}

export function SyncView() {
  const api = useApi();
  const qc = useQueryClient();
  const accounts = useAccounts();
  const pairs = useQuery({ queryKey: [...syncKeys.all, 'pairs'], queryFn: () => api.call('sync.pairs.list', {}), refetchInterval: 2000 });
  const conflicts = useQuery({ queryKey: [...syncKeys.all, 'conflicts'], queryFn: () => api.call('sync.conflicts.list', {}), refetchInterval: 2000 });
  const storage = useStorageAccounts();
  const [localPath, setLocalPath] = useState('');
  const [account, setAccount] = useState<number | ''>('');
  const [remotePath, setRemotePath] = useState('/');
  const [openFolders, setOpenFolders] = useState<number | null>(null);
  const [picking, setPicking] = useState(false);
  // The system's folder dialog exists in the desktop app only; in a browser the path is typed.
  const desktop = useAppInfo().data?.mode === 'electron';
  const chooseLocal = () =>
    void act('Could not choose a folder', async () => {
      const { path } = await api.call('sync.localFolder.choose', {});
      if (path) setLocalPath(path);
    });
  const refresh = () => void qc.invalidateQueries({ queryKey: syncKeys.all });
  const act = async (what: string, f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (e) {
      toastError(what, e);
    }
    refresh();
  };
  const nameOf = (id: number) => accounts.data?.find((a) => a.id === id)?.account ?? `account ${id}`;

  const add = (e: FormEvent) => {
    e.preventDefault();
    const acc = account === '' ? storage[0]?.id : account;
    if (!acc) return;
    void act('Could not add the pair', async () => {
      await api.call('sync.pairs.create', { localPath: localPath.trim(), account: acc, remotePath: remotePath.trim() || '/', excluded: [] });
      setLocalPath('');
    });
  };

  return (
    <section className="sync-view" aria-label="Sync" data-testid="sync-view">
      <div className="toolbar">
        <h1 className="dashboard-title">Sync</h1>
      </div>
      <form className="sync-add" onSubmit={add} data-testid="sync-add">
        <label>
          Folder on this computer
          <input value={localPath} onChange={(e) => setLocalPath(e.target.value)} placeholder="/home/me/Documents" required data-testid="sync-local" />
        </label>
        {desktop && (
          <button type="button" className="btn" onClick={chooseLocal} data-testid="sync-local-choose">
            Choose…
          </button>
        )}
        <label>
          Account
          <select value={account === '' ? (storage[0]?.id ?? '') : account} onChange={(e) => setAccount(Number(e.target.value))} data-testid="sync-account">
            <AccountOptions accounts={storage} />
          </select>
        </label>
        <label>
          Folder there
          <input value={remotePath} onChange={(e) => setRemotePath(e.target.value)} placeholder="/" data-testid="sync-remote" />
        </label>
        <button type="button" className="btn" disabled={!storage.length} onClick={() => setPicking(true)} data-testid="sync-remote-choose">
          Choose…
        </button>
        <button type="submit" className="btn btn-primary" disabled={!storage.length} data-testid="sync-add-submit">
          Add a pair
        </button>
      </form>
      {picking && (
        <FolderPicker
          title="Sync with the folder…"
          confirm="Sync with"
          start={{ account: account === '' ? storage[0].id : account, folder: 'root' }}
          onPick={(to) => {
            // Pairs name their remote folder by path; a folder with none (a file provider's) cannot be one.
            if (to.path === null) toastError('Could not choose this folder', new Error('This folder cannot be synced.'));
            else {
              setAccount(to.account);
              setRemotePath(to.path);
            }
            setPicking(false);
          }}
          onClose={() => setPicking(false)}
        />
      )}

      <h2 className="section-title">Pairs</h2>
      {pairs.data?.length === 0 && <p className="muted">No folder is synced yet.</p>}
      <ul className="sync-pairs">
        {pairs.data?.map((p) => (
          <li key={p.id} className={`sync-pair state-${p.paused ? 'paused' : p.state}`} data-testid={`sync-pair-${p.id}`}>
            <div className="sync-pair-paths">
              <strong>
                <Name value={p.localPath} />
              </strong>{' '}
              ⇄ <Name value={nameOf(p.account)} />: <Name value={p.remotePath} />
            </div>
            <div className="sync-pair-state" data-testid="sync-state">
              {stateText(p)}
              {p.conflicts > 0 && <span className="sync-badge" data-testid="sync-conflict-count">{conflictsText(p.conflicts)}</span>}
            </div>
            <div className="sync-pair-actions">
              {(p.state === 'held' || p.state === 'refused') && !p.paused && (
                <button type="button" className="btn" onClick={() => act('Could not confirm', () => api.call('sync.pairs.confirm', { id: p.id }))}>
                  Confirm
                </button>
              )}
              <button type="button" className="btn" onClick={() => act('Could not sync', () => api.call('sync.pairs.rescan', { id: p.id }))} disabled={p.paused} data-testid="sync-now">
                Sync now
              </button>
              {p.paused ? (
                <button type="button" className="btn" onClick={() => act('Could not resume', () => api.call('sync.pairs.resume', { id: p.id }))} data-testid="sync-resume">
                  Resume
                </button>
              ) : (
                <button type="button" className="btn" onClick={() => act('Could not pause', () => api.call('sync.pairs.pause', { id: p.id }))} data-testid="sync-pause">
                  Pause
                </button>
              )}
              <button type="button" className="btn" aria-expanded={openFolders === p.id} onClick={() => setOpenFolders(openFolders === p.id ? null : p.id)} data-testid="sync-folders-toggle">
                Folders{p.excluded.length > 0 ? ` (${p.excluded.length} left out)` : ''}
              </button>
              <button type="button" className="btn btn-ghost" onClick={() => act('Could not remove', () => api.call('sync.pairs.remove', { id: p.id }))} data-testid="sync-remove">
                Remove
              </button>
            </div>
            {openFolders === p.id && (
              <div className="sync-pair-folders">
                <PairFolders pair={p} onChanged={() => qc.invalidateQueries({ queryKey: syncKeys.all })} />
              </div>
            )}
          </li>
        ))}
      </ul>

      <RemotePollSetting />

      <h2 className="section-title">Conflicts</h2>
      {conflicts.data?.length === 0 && <p className="muted">No conflicts.</p>}
      <ul className="sync-conflicts">
        {conflicts.data?.map((c: SyncConflict) => (
          <li key={c.id} className="sync-conflict" data-testid="sync-conflict">
            <div>
              <strong>{c.path}</strong> changed on both sides; your version is kept as <em>{c.copyPath}</em>.
            </div>
            <div className="sync-pair-actions">
              <button type="button" className="btn" onClick={() => act('Could not resolve', () => api.call('sync.conflicts.resolve', { id: c.id, keep: 'mine' }))} data-testid="keep-mine">
                Keep mine
              </button>
              <button type="button" className="btn" onClick={() => act('Could not resolve', () => api.call('sync.conflicts.resolve', { id: c.id, keep: 'theirs' }))} data-testid="keep-theirs">
                Keep theirs
              </button>
              <button type="button" className="btn" onClick={() => act('Could not resolve', () => api.call('sync.conflicts.resolve', { id: c.id, keep: 'both' }))} data-testid="keep-both">
                Keep both
              </button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
