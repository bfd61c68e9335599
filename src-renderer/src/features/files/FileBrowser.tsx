/**
 * The right-hand pane: breadcrumbs, toolbar, filter and the listing of the current folder, and
 * the actions on it (open, download, rename, delete, create folder, upload, move/copy by drag,
 * context menu, Cut/Copy/Paste, Move to… / Copy to…).
 */
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Account, Resource } from '../../../../src-main/contract';
import { useApi, useFolder } from '../../api/hooks';
import { ContextMenu, type MenuItem } from '../../components/ContextMenu';
import { ConfirmDialog, PromptDialog } from '../../components/Dialog';
import { FolderPicker } from '../../components/FolderPicker';
import { count, Name, named, nameText, plain } from '../../components/Name';
import { NewFolderIcon, RefreshIcon, RenameIcon, TrashIcon, UploadIcon, DownloadIcon } from '../../components/Icons';
import { itemLink, toastError, useUi, type SortKey } from '../../stores/ui';
import { deleteItems, paste, refOf, renameItem, transferItems, useClipboard } from './actions';
import { dropItems, hasFiles, hasItems, isCopyGesture, readItems } from './dnd';
import { AccountProblem, isAccountError } from '../accounts/AccountProblem';
import { FileList } from './FileList';
import { droppedItems, requestDrop, requestUpload } from './upload';
import { downloadMany } from '../transfers/download-many';

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

function sortItems(items: Resource[], key: SortKey, dir: 'asc' | 'desc'): Resource[] {
  const sign = dir === 'asc' ? 1 : -1;
  const byKey =
    key === 'size'
      ? (a: Resource, b: Resource) => (a.size ?? -1) - (b.size ?? -1)
      : key === 'modified'
        ? (a: Resource, b: Resource) => (a.modified ? Date.parse(a.modified) : 0) - (b.modified ? Date.parse(b.modified) : 0)
        : () => 0;
  // Folders stay on top whatever the order; ties fall back to the name.
  return items.slice().sort((a, b) => {
    if (a.kind !== b.kind) return a.kind === 'folder' ? -1 : 1;
    return sign * (byKey(a, b) || collator.compare(a.name, b.name));
  });
}

export function FileBrowser({ account }: { account: Account }) {
  const api = useApi();
  const qc = useQueryClient();
  const folderId = useUi((s) => s.folder);
  const sort = useUi((s) => s.sort);
  const selected = useUi((s) => s.selected);
  const open = useUi((s) => s.open);
  const listing = useFolder(account.id, folderId);
  const [filter, setFilter] = useState('');
  // A filter belongs to the folder it was typed in.
  useEffect(() => setFilter(''), [folderId]);
  const items = useMemo(() => {
    const needle = filter.trim().toLocaleLowerCase();
    const shown = needle ? listing.items.filter((i) => i.name.toLocaleLowerCase().includes(needle)) : listing.items;
    return sortItems(shown, sort.key, sort.dir);
  }, [listing.items, sort.key, sort.dir, filter]);
  const [dialog, setDialog] = useState<{ type: 'mkdir' } | { type: 'delete'; items: Resource[] } | { type: 'pick'; op: 'move' | 'copy'; items: Resource[] } | null>(null);
  const [menu, setMenu] = useState<{ x: number; y: number; onItem: boolean } | null>(null);
  const clip = useClipboard((s) => s.clip);
  // What Delete does here, from the account's own features (shown before anything is deleted).
  const deleteInfo = useQuery({ queryKey: ['deleteInfo', account.id], queryFn: () => api.call('files.deleteInfo', { account: account.id }), staleTime: Infinity });
  const pickerRef = useRef<HTMLInputElement>(null);

  const folder = listing.folder;
  const canUpload = folder?.canUploadFiles ?? false;
  const folderName = folder?.name || account.account;
  const target = { account: account.id, folder: folderId, folderName };
  const selectedItems = items.filter((i) => selected.has(i.id));
  const refresh = listing.refetch;
  // F5 lists the folder again instead of reloading the page (Ctrl+F5 still reloads).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'F5' || e.ctrlKey || e.metaKey || e.shiftKey) return;
      e.preventDefault();
      void refresh();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [refresh]);

  const download = async (item: Resource) => {
    if (item.kind !== 'file') return;
    try {
      if (api.mode === 'ws') return await api.download({ account: item.account, id: item.id, name: item.name });
      const r = await api.call('files.download', { account: item.account, id: item.id });
      if (r.path) useUi.getState().toast({ kind: 'info', title: 'Downloaded', message: nameText(r.path) });
    } catch (e) {
      toastError(named`Could not download "${item.name}"`, e);
    }
  };

  const openItem = (item: Resource) => {
    if (item.kind === 'folder') open(account.id, item.id);
    else void download(item);
  };

  const goUp = () => {
    if (folder?.parent) open(account.id, folder.parent.id);
  };

  const rename = async (item: Resource, name: string) => {
    const renamed = await renameItem(api, refOf(item), name, folderName);
    // Ids follow the name on path-addressed backends: keep the renamed item selected.
    const ui = useUi.getState();
    if (renamed && ui.selected.has(item.id)) ui.setSelection([...ui.selected].map((id) => (id === item.id ? renamed.id : id)));
  };

  const clipboard = (op: 'cut' | 'copy' | 'paste', chosen: Resource[]) => {
    if (op === 'paste') return void paste(api, target);
    useClipboard.getState().set({ op: op === 'cut' ? 'move' : 'copy', items: chosen.map(refOf), from: { account: account.id, folder: folderId } });
    const what = chosen.length === 1 ? named`“${chosen[0].name}”` : count(chosen.length);
    useUi.getState().toast({ kind: 'info', title: op === 'cut' ? 'Cut' : 'Copied', message: named`${what}: paste with Ctrl+V in any folder.` });
  };

  const copyLink = async (item: Resource) => {
    const link = itemLink(account.id, folderId, item.id);
    try {
      await navigator.clipboard.writeText(link);
      useUi.getState().toast({ kind: 'info', title: 'Link copied', message: link });
    } catch {
      // No clipboard permission: the link is shown to copy by hand.
      useUi.getState().toast({ kind: 'info', title: 'Link', message: link });
    }
  };

  const menuItems = (onItem: boolean): MenuItem[] => {
    const chosen = onItem ? selectedItems : [];
    const one = chosen.length === 1 ? chosen[0] : null;
    const pasteItem: MenuItem = { id: 'paste', label: clip ? (clip.items.length === 1 ? named`Paste “${clip.items[0].name}”` : named`Paste ${count(clip.items.length)}`) : 'Paste', shortcut: 'Ctrl+V', disabled: !clip || !canUpload, run: () => void paste(api, target) };
    if (!onItem) {
      return [pasteItem, { id: 'new-folder', label: 'New folder', disabled: !folder?.canCreateFolders, run: () => setDialog({ type: 'mkdir' }) }];
    }
    return [
      { id: 'open', label: 'Open', disabled: !one, run: () => one && openItem(one) },
      { id: 'download', label: 'Download', disabled: !one || one.kind !== 'file', run: () => one && void download(one) },
      { id: 'rename', label: 'Rename', shortcut: 'F2', disabled: !one, run: () => one && useUi.getState().setRenaming(one.id), separator: true },
      { id: 'move-to', label: 'Move to…', run: () => setDialog({ type: 'pick', op: 'move', items: chosen }) },
      { id: 'copy-to', label: 'Copy to…', run: () => setDialog({ type: 'pick', op: 'copy', items: chosen }) },
      { id: 'cut', label: 'Cut', shortcut: 'Ctrl+X', separator: true, run: () => clipboard('cut', chosen) },
      { id: 'copy', label: 'Copy', shortcut: 'Ctrl+C', run: () => clipboard('copy', chosen) },
      pasteItem,
      { id: 'copy-link', label: 'Copy link', disabled: !one, run: () => one && void copyLink(one) },
      { id: 'delete', label: 'Delete', shortcut: 'Del', danger: true, separator: true, run: () => setDialog({ type: 'delete', items: chosen }) },
    ];
  };

  const mkdir = async (name: string) => {
    try {
      const created = await api.call('files.mkdir', { account: account.id, parent: folderId, name });
      const index = items.findIndex((i) => i.id === created.id);
      useUi.getState().setSelection([created.id], Math.max(index, 0), Math.max(index, 0));
    } catch (e) {
      toastError('Could not create the folder', e);
    }
  };

  // Breadcrumbs: the account root, then each ancestor, then this folder.
  const crumbs = useMemo(() => {
    if (!folder) return [{ id: 'root', name: account.account }];
    const ancestors = (folder.ancestors ?? []).slice().reverse();
    const trail = [...ancestors, { id: folder.id, name: folder.name }];
    return trail.map((c) => (c.id === 'root' ? { id: 'root', name: account.account } : c));
  }, [folder, account.account]);

  const errorText = listing.error ? listing.error.message : null;
  // A failure of the account itself (credentials, server) is said once, with Reconnect and
  // Retry, instead of a listing that cannot load and actions that cannot work: also when an
  // earlier listing of this folder is still at hand (it would show files that may be gone).
  if (isAccountError(listing.error)) return <AccountProblem account={account} error={listing.error} onRetry={() => void listing.refetch()} />;

  return (
    <section className="browser" aria-label="File browser">
      <div className="toolbar">
        <nav className="breadcrumbs" aria-label="Folder path" data-testid="breadcrumbs">
          <ol>
            {crumbs.map((c, i) => {
              const last = i === crumbs.length - 1;
              return (
                <li key={c.id}>
                  {i > 0 && (
                    <span className="crumb-sep" aria-hidden="true">
                      /
                    </span>
                  )}
                  <button
                    type="button"
                    className={`crumb${last ? ' current' : ''}`}
                    aria-current={last ? 'location' : undefined}
                    onClick={() => open(account.id, c.id)}
                    onDragOver={(e) => {
                      if (last || !(hasItems(e.dataTransfer) || hasFiles(e.dataTransfer))) return;
                      e.preventDefault();
                      e.dataTransfer.dropEffect = hasFiles(e.dataTransfer) || isCopyGesture(e) ? 'copy' : 'move';
                    }}
                    onDrop={(e) => {
                      e.preventDefault();
                      const dragged = readItems(e.dataTransfer);
                      if (dragged) void dropItems(api, dragged, { account: account.id, folder: c.id, folderName: c.name }, isCopyGesture(e));
                      else if (e.dataTransfer.files.length) void requestDrop(api, qc, droppedItems(e.dataTransfer), { account: account.id, folder: c.id, folderName: c.name });
                    }}
                  >
                    <Name value={c.name} />
                  </button>
                </li>
              );
            })}
          </ol>
        </nav>
        <div className="toolbar-actions">
          <input
            type="search"
            className="input filter-input"
            placeholder="Filter"
            aria-label="Filter this folder by name"
            value={filter}
            onChange={(e) => setFilter(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setFilter('');
            }}
            data-testid="filter"
          />
          {selectedItems.length > 0 && (
            <button
              type="button"
              className="btn btn-ghost"
              // One file as itself; several, or a folder, as one zip (desktop: into a chosen folder).
              onClick={() => void (selectedItems.length === 1 && selectedItems[0].kind === 'file' ? download(selectedItems[0]) : downloadMany(api, selectedItems))}
              data-testid="toolbar-download"
            >
              <DownloadIcon /> Download
            </button>
          )}
          {selectedItems.length === 1 && (
            <button type="button" className="btn btn-ghost" onClick={() => useUi.getState().setRenaming(selectedItems[0].id)} data-testid="toolbar-rename">
              <RenameIcon /> Rename
            </button>
          )}
          {selectedItems.length > 0 && (
            <button type="button" className="btn btn-ghost" onClick={() => setDialog({ type: 'delete', items: selectedItems })} data-testid="toolbar-delete">
              <TrashIcon /> Delete
            </button>
          )}
          <button type="button" className="icon-btn" onClick={() => void refresh()} title="Refresh (F5)" aria-label="Refresh" data-testid="refresh">
            <RefreshIcon />
          </button>
          <button type="button" className="btn" disabled={!folder?.canCreateFolders} onClick={() => setDialog({ type: 'mkdir' })} data-testid="new-folder">
            <NewFolderIcon /> New folder
          </button>
          <button type="button" className="btn btn-primary" disabled={!canUpload} onClick={() => pickerRef.current?.click()} data-testid="upload">
            <UploadIcon /> Upload
          </button>
          <input
            ref={pickerRef}
            type="file"
            multiple
            hidden
            data-testid="upload-input"
            onChange={(e) => {
              const files = Array.from(e.currentTarget.files ?? []);
              e.currentTarget.value = '';
              void requestUpload(api, qc, files, target);
            }}
          />
        </div>
      </div>
      <FileList
        account={account.id}
        folder={folderId}
        items={items}
        loading={listing.isLoading}
        error={errorText}
        complete={listing.complete}
        total={listing.total}
        loaded={listing.items.length}
        filtered={filter.trim() !== ''}
        canUpload={canUpload}
        onOpen={openItem}
        onDownload={(i) => void download(i)}
        onUp={goUp}
        onRename={(i, n) => void rename(i, n)}
        onDelete={(chosen) => setDialog({ type: 'delete', items: chosen })}
        onDropFiles={(dropped, into) =>
          void requestDrop(api, qc, dropped, into ? { account: account.id, folder: into.id, folderName: into.name } : target)
        }
        onDropItems={(dragged, into, copy) => void dropItems(api, dragged, { account: account.id, folder: into ? into.id : folderId, folderName: into ? into.name : folderName }, copy)}
        onContextMenu={(at, onItem) => setMenu({ ...at, onItem })}
        onClipboard={clipboard}
      />
      {menu && <ContextMenu x={menu.x} y={menu.y} label={menu.onItem ? 'Item actions' : 'Folder actions'} items={menuItems(menu.onItem)} onClose={() => setMenu(null)} />}
      {dialog?.type === 'pick' && (
        <FolderPicker
          title={named`${plain(dialog.op === 'move' ? 'Move' : 'Copy')} ${dialog.items.length === 1 ? named`“${dialog.items[0].name}”` : count(dialog.items.length)} to…`}
          confirm={dialog.op === 'move' ? 'Move to' : 'Copy to'}
          start={{ account: account.id, folder: folderId }}
          onPick={(to) => void transferItems(api, dialog.items.map(refOf), to, dialog.op)}
          onClose={() => setDialog(null)}
        />
      )}
      {dialog?.type === 'mkdir' && (
        <PromptDialog title="New folder" label="Folder name" initial="New folder" confirm="Create" onSubmit={(n) => void mkdir(n)} onClose={() => setDialog(null)} testId="mkdir-dialog" />
      )}
      {dialog?.type === 'delete' && (
        <ConfirmDialog
          title={dialog.items.length === 1 ? named`Delete "${dialog.items[0].name}"?` : named`Delete ${count(dialog.items.length)}?`}
          message={
            <>
              <ul className="conflict-list" data-testid="delete-items">
                {dialog.items.slice(0, 8).map((i) => (
                  <li key={i.id}>
                    <Name value={i.name} />
                    {i.kind === 'folder' ? ' (folder, with everything inside)' : ''}
                  </li>
                ))}
                {dialog.items.length > 8 && <li>…and {dialog.items.length - 8} more</li>}
              </ul>
              <p data-testid="delete-where">
                {deleteWhere(account.account, dialog.items.length === 1 ? ['It goes', 'it is', 'brings it'] : ['They go', 'they are', 'brings them'], deleteInfo)}
              </p>
            </>
          }
          confirm={deleteInfo.data ? (deleteInfo.data.trash ? 'Move to trash' : 'Delete permanently') : 'Delete'}
          danger
          onConfirm={() => void deleteItems(api, dialog.items.map(refOf))}
          onClose={() => setDialog(null)}
          testId="delete-dialog"
        />
      )}
    </section>
  );
}

/** What the delete dialog says happens, from the account's abilities (`files.deleteInfo`). */
function deleteWhere(
  accountName: string,
  [goes, are, brings]: [string, string, string],
  info: { data?: { trash: boolean; undo: boolean }; isError: boolean },
): ReactNode {
  if (info.data?.trash) return named`${plain(goes)} to the trash of “${accountName}”${plain(info.data.undo ? `; Undo ${brings} back` : '')}.`;
  if (info.data) return named`“${accountName}” has no trash: ${plain(are)} deleted permanently.`;
  if (info.isError) return 'Items go to the account’s trash where it has one; otherwise they are deleted permanently.';
  return 'Checking what this account does with deleted items…';
}
