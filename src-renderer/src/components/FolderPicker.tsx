/**
 * Chooses a destination folder in any storage account (Move to…, Copy to…): an account list,
 * the folders of the open one (Enter or a click goes in, "Up" goes out), and the confirm button
 * that names the folder. Everything is a native control, so Tab and Enter do all of it.
 */
import { useEffect, useState, type ReactNode } from 'react';
import type { Resource } from '../../../src-main/contract';
import { useApi, useStorageAccounts } from '../api/hooks';
import { AccountOptions } from './AccountOptions';
import { Dialog, DialogActions } from './Dialog';
import { FolderIcon } from './Icons';
import { Name, named, nameText, plain } from './Name';
import './context-menu.css';

export interface PickedFolder {
  account: number;
  folder: string;
  folderName: string;
  /** The folder's path in its account (null for items a file provider serves). */
  path: string | null;
}

export function FolderPicker(props: { title: ReactNode; confirm: string; start: { account: number; folder: string }; onPick(to: PickedFolder): void; onClose(): void }) {
  const api = useApi();
  const [at, setAt] = useState(props.start);
  const [state, setState] = useState<{ folder: Resource | null; folders: Resource[]; error: string | null; loading: boolean }>({ folder: null, folders: [], error: null, loading: true });
  const storage = useStorageAccounts();
  const accountName = storage.find((a) => a.id === at.account)?.account ?? '';

  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    api
      .call('files.list', { account: at.account, folder: at.folder, page: 1, pageSize: 100000 })
      .then((r) => live && setState({ folder: r.folder, folders: r.items.filter((i) => i.kind === 'folder'), error: null, loading: false }))
      .catch((e: unknown) => live && setState({ folder: null, folders: [], error: e instanceof Error ? e.message : String(e), loading: false }));
    return () => {
      live = false;
    };
  }, [api, at.account, at.folder]);

  const here = state.folder && state.folder.id !== 'root' ? state.folder.name : accountName;
  return (
    <Dialog title={props.title} onClose={props.onClose} testId="folder-picker" wide>
      <div className="dialog-body">
        <div className="picker-path">
          <label className="field">
            <span className="field-label">Account</span>
            <select
              className="input"
              value={at.account}
              data-testid="picker-account"
              onChange={(e) => setAt({ account: Number(e.currentTarget.value), folder: 'root' })}
            >
              <AccountOptions accounts={storage} />
            </select>
          </label>
          <button type="button" className="btn" disabled={!state.folder?.parent} onClick={() => state.folder?.parent && setAt({ account: at.account, folder: state.folder.parent.id })} data-testid="picker-up">
            Up
          </button>
          <strong data-testid="picker-here">
            <Name value={here} />
          </strong>
        </div>
        <ul className="picker-list" aria-label={`Folders in ${nameText(here)}`} aria-busy={state.loading}>
          {state.error && <li role="alert">{state.error}</li>}
          {!state.error && !state.loading && state.folders.length === 0 && <li className="muted">No folders here.</li>}
          {state.folders.map((f) => (
            <li key={f.id}>
              <button type="button" data-testid="picker-folder" data-name={f.name} onClick={() => setAt({ account: at.account, folder: f.id })}>
                <FolderIcon /> <Name value={f.name} />
              </button>
            </li>
          ))}
        </ul>
      </div>
      <DialogActions
        confirm={named`${plain(props.confirm)} “${here}”`}
        disabled={!state.folder || state.loading || !state.folder.canUploadFiles}
        testId="picker-ok"
        onConfirm={() => props.onPick({ account: at.account, folder: at.folder, folderName: here, path: state.folder?.path ?? null })}
        onClose={props.onClose}
      />
    </Dialog>
  );
}
