/**
 * The right-hand pane: breadcrumbs, toolbar and the listing of the current folder, and the
 * actions on it (open, download, rename, delete, create folder, upload, move/copy by drag).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { Account, Resource } from '../../../../src-main/contract';
import { useApi, useFolder } from '../../api/hooks';
import { ConfirmDialog, PromptDialog } from '../../components/Dialog';
import { NewFolderIcon, RefreshIcon, RenameIcon, TrashIcon, UploadIcon, DownloadIcon } from '../../components/Icons';
import { toastError, useUi, type SortKey } from '../../stores/ui';
import { dropItems, hasFiles, hasItems, isCopyGesture, readItems } from './dnd';
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
  const items = useMemo(() => sortItems(listing.items, sort.key, sort.dir), [listing.items, sort.key, sort.dir]);
  const [dialog, setDialog] = useState<{ type: 'mkdir' } | { type: 'delete'; items: Resource[] } | null>(null);
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
      if (r.path) useUi.getState().toast({ kind: 'info', title: 'Downloaded', message: r.path });
    } catch (e) {
      toastError(`Could not download "${item.name}"`, e);
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
    try {
      const renamed = await api.call('files.rename', { account: item.account, id: item.id, name });
      // Ids follow the name on path-addressed backends: keep the renamed item selected.
      const ui = useUi.getState();
      if (ui.selected.has(item.id)) ui.setSelection([...ui.selected].map((id) => (id === item.id ? renamed.id : id)));
    } catch (e) {
      toastError(`Could not rename "${item.name}"`, e);
    }
  };

  const remove = async (chosen: Resource[]) => {
    for (const item of chosen) {
      try {
        await api.call('files.delete', { account: item.account, id: item.id, recursive: true });
      } catch (e) {
        toastError(`Could not delete "${item.name}"`, e);
      }
    }
    useUi.getState().setSelection([]);
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
                      if (dragged) void dropItems(api, dragged, { account: account.id, folder: c.id }, isCopyGesture(e));
                      else if (e.dataTransfer.files.length) void requestDrop(api, qc, droppedItems(e.dataTransfer), { account: account.id, folder: c.id, folderName: c.name });
                    }}
                  >
                    {c.name}
                  </button>
                </li>
              );
            })}
          </ol>
        </nav>
        <div className="toolbar-actions">
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
        canUpload={canUpload}
        onOpen={openItem}
        onDownload={(i) => void download(i)}
        onUp={goUp}
        onRename={(i, n) => void rename(i, n)}
        onDelete={(chosen) => setDialog({ type: 'delete', items: chosen })}
        onDropFiles={(dropped, into) =>
          void requestDrop(api, qc, dropped, into ? { account: account.id, folder: into.id, folderName: into.name } : target)
        }
        onDropItems={(dragged, into, copy) => void dropItems(api, dragged, { account: account.id, folder: into ? into.id : folderId }, copy)}
      />
      {dialog?.type === 'mkdir' && (
        <PromptDialog title="New folder" label="Folder name" initial="New folder" confirm="Create" onSubmit={(n) => void mkdir(n)} onClose={() => setDialog(null)} testId="mkdir-dialog" />
      )}
      {dialog?.type === 'delete' && (
        <ConfirmDialog
          title={dialog.items.length === 1 ? `Delete "${dialog.items[0].name}"?` : `Delete ${dialog.items.length} items?`}
          message={
            <p>
              {dialog.items.some((i) => i.kind === 'folder') ? 'Folders are deleted with everything inside them. ' : ''}
              Items go to the account’s trash where it has one; otherwise they are deleted permanently.
            </p>
          }
          confirm="Delete"
          danger
          onConfirm={() => void remove(dialog.items)}
          onClose={() => setDialog(null)}
          testId="delete-dialog"
        />
      )}
    </section>
  );
}
