/**
 * The folder listing: a virtualized listbox (only the visible rows exist in the DOM, so 50,000
 * entries scroll as smoothly as 50), with multi-select, keyboard navigation, inline rename,
 * drag sources and drop targets.
 */
import { memo, useCallback, useEffect, useMemo, useRef, useState, type DragEvent, type KeyboardEvent, type MouseEvent, type RefObject } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { Resource } from '../../../../src-main/contract';
import { formatBytes, formatDate } from '../../components/format';
import { DownloadIcon, FileIcon, FolderIcon, UploadIcon } from '../../components/Icons';
import { Name, nameText } from '../../components/Name';
import { useUi, type SortKey } from '../../stores/ui';
import { useClipboard } from './actions';
import { hasFiles, hasItems, isCopyGesture, ITEMS_MIME, readItems, type DraggedItems } from './dnd';
import { droppedItems, type Dropped } from './upload';
import { listPlaceholder } from '../../components/ListPlaceholder';
import { SyncBadge, useSyncBadges } from '../sync/badges';
import type { SyncFileState } from '../../../../src-main/contract';
import './files.css';

const ROW_HEIGHT = 36;

export interface FileListProps {
  account: number;
  folder: string;
  items: Resource[];
  loading: boolean;
  error: string | null;
  complete: boolean;
  /** Entries in the folder, and how many of them have arrived so far. */
  total: number;
  loaded: number;
  /** The Filter box narrows `items` to some of the folder's entries. */
  filtered: boolean;
  canUpload: boolean;
  onOpen(item: Resource): void;
  onDownload(item: Resource): void;
  onUp(): void;
  onRename(item: Resource, name: string): void;
  onDelete(items: Resource[]): void;
  onDropFiles(dropped: Dropped, folder: Resource | null): void;
  onDropItems(items: DraggedItems, folder: Resource | null, copy: boolean): void;
  /** Right click, Shift+F10 or the Menu key: on the selection (`onItem`) or the folder itself. */
  onContextMenu(at: { x: number; y: number }, onItem: boolean): void;
  /** Ctrl+X / Ctrl+C on the selection, Ctrl+V into this folder. */
  onClipboard(op: 'cut' | 'copy' | 'paste', items: Resource[]): void;
}

/** Type-ahead: keys typed within this long of each other make one prefix. */
const TYPE_AHEAD_MS = 800;

export function FileList(props: FileListProps) {
  const { items } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const selected = useUi((s) => s.selected);
  const focusIndex = useUi((s) => s.focusIndex);
  const anchorIndex = useUi((s) => s.anchorIndex);
  const renaming = useUi((s) => s.renaming);
  const sort = useUi((s) => s.sort);
  const setSort = useUi((s) => s.setSort);
  const setSelection = useUi((s) => s.setSelection);
  const setRenaming = useUi((s) => s.setRenaming);
  const [dropTarget, setDropTarget] = useState<string | null>(null);
  // Items cut and waiting for Paste are shown faded, as file managers do.
  const clip = useClipboard((s) => s.clip);
  const cut = useMemo(() => (clip?.op === 'move' ? new Set(clip.items.map((i) => i.id)) : null), [clip]);
  const badges = useSyncBadges(props.account, props.folder);

  const virtualizer = useVirtualizer({
    count: items.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });

  const focus = Math.min(focusIndex, Math.max(items.length - 1, 0));
  useEffect(() => {
    if (items.length) virtualizer.scrollToIndex(focus, { align: 'auto' });
  }, [focus, items.length, virtualizer]);

  const selectRange = useCallback(
    (from: number, to: number, add: boolean) => {
      const [a, b] = from <= to ? [from, to] : [to, from];
      const ids = new Set(add ? useUi.getState().selected : []);
      for (let i = a; i <= b; i++) ids.add(items[i].id);
      return ids;
    },
    [items],
  );

  const onRowClick = useCallback(
    (e: MouseEvent, index: number) => {
      const id = items[index].id;
      if (e.shiftKey) {
        setSelection(selectRange(anchorIndex, index, e.ctrlKey || e.metaKey), index, anchorIndex);
      } else if (e.ctrlKey || e.metaKey) {
        const next = new Set(selected);
        if (next.has(id)) next.delete(id);
        else next.add(id);
        setSelection(next, index, index);
      } else {
        setSelection([id], index, index);
      }
      scrollRef.current?.focus({ preventScroll: true });
    },
    [items, selected, anchorIndex, selectRange, setSelection],
  );

  const selectedItems = () => items.filter((i) => selected.has(i.id));
  const typed = useRef({ text: '', at: 0 });

  /** Opens the menu beside the focused row (keyboard), selecting it when nothing is. */
  const menuFromKeyboard = () => {
    const row = scrollRef.current?.querySelector<HTMLElement>(`#row-${focus}`);
    const box = (row ?? scrollRef.current)?.getBoundingClientRect();
    const onItem = !!items[focus];
    if (onItem && !selected.has(items[focus].id)) setSelection([items[focus].id], focus, focus);
    props.onContextMenu({ x: (box?.left ?? 0) + 48, y: (box?.top ?? 0) + (row ? ROW_HEIGHT - 4 : 8) }, onItem);
  };

  /** Jumps to the first item whose name starts with what was typed (case-insensitive). */
  const typeAhead = (key: string, time: number) => {
    const t = typed.current;
    t.text = time - t.at > TYPE_AHEAD_MS ? key : t.text + key;
    t.at = time;
    const prefix = t.text.toLocaleLowerCase();
    // A repeated single letter cycles through the names starting with it.
    const cycling = prefix.length > 1 && [...prefix].every((c) => c === prefix[0]);
    const wanted = cycling ? prefix[0] : prefix;
    const from = cycling || prefix.length === 1 ? focus + 1 : focus;
    for (let k = 0; k < items.length; k++) {
      const i = (from + k) % items.length;
      if (items[i].name.toLocaleLowerCase().startsWith(wanted)) return setSelection([items[i].id], i, i);
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (renaming) return;
    const mod = e.ctrlKey || e.metaKey;
    if ((e.key === 'F10' && e.shiftKey) || e.key === 'ContextMenu') {
      e.preventDefault();
      return menuFromKeyboard();
    }
    if (mod && !e.altKey && !e.shiftKey && ['x', 'c', 'v'].includes(e.key.toLowerCase())) {
      const op = ({ x: 'cut', c: 'copy', v: 'paste' } as const)[e.key.toLowerCase() as 'x' | 'c' | 'v'];
      const chosen = selectedItems();
      if (op !== 'paste' && chosen.length === 0) return;
      e.preventDefault();
      return props.onClipboard(op, chosen);
    }
    if (e.key.length === 1 && e.key !== ' ' && !mod && !e.altKey) {
      e.preventDefault();
      return typeAhead(e.key, e.timeStamp);
    }
    if (e.key === ' ' && typed.current.text && e.timeStamp - typed.current.at <= TYPE_AHEAD_MS) {
      // A space inside a name being typed is part of it, not a selection toggle.
      e.preventDefault();
      return typeAhead(' ', e.timeStamp);
    }
    const last = items.length - 1;
    const move = (to: number) => {
      const index = Math.max(0, Math.min(last, to));
      if (last < 0) return;
      e.preventDefault();
      if (e.shiftKey) setSelection(selectRange(anchorIndex, index, false), index, anchorIndex);
      else if (mod) useUi.getState().setFocus(index);
      else setSelection([items[index].id], index, index);
    };
    const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 400) / ROW_HEIGHT) - 1);
    switch (e.key) {
      case 'ArrowDown':
        return move(focus + 1);
      case 'ArrowUp':
        if (e.altKey) {
          e.preventDefault();
          return props.onUp();
        }
        return move(focus - 1);
      case 'Home':
        return move(0);
      case 'End':
        return move(last);
      case 'PageDown':
        return move(focus + page);
      case 'PageUp':
        return move(focus - page);
      case ' ':
        if (items[focus]) {
          e.preventDefault();
          const next = new Set(selected);
          if (next.has(items[focus].id)) next.delete(items[focus].id);
          else next.add(items[focus].id);
          setSelection(next, focus, focus);
        }
        return;
      case 'Enter':
        if (items[focus]) {
          e.preventDefault();
          props.onOpen(items[focus]);
        }
        return;
      case 'Backspace':
        e.preventDefault();
        return props.onUp();
      case 'F2':
        if (items[focus]) {
          e.preventDefault();
          setRenaming(items[focus].id);
        }
        return;
      case 'Delete': {
        const chosen = selectedItems();
        if (chosen.length) {
          e.preventDefault();
          props.onDelete(chosen);
        }
        return;
      }
      case 'Escape':
        return setSelection([]);
      case 'a':
      case 'A':
        if (mod) {
          e.preventDefault();
          setSelection(items.map((i) => i.id));
        }
        return;
    }
  };

  // ---- drag and drop --------------------------------------------------------------------
  const onDragStartRow = (e: DragEvent, index: number) => {
    const item = items[index];
    let ids = [...selected];
    if (!selected.has(item.id)) {
      ids = [item.id];
      setSelection(ids, index, index);
    }
    const nameOf = new Map(items.map((i) => [i.id, i.name]));
    const names = ids.map((id) => nameOf.get(id) ?? id);
    const payload: DraggedItems = { account: props.account, from: props.folder, ids, names };
    e.dataTransfer.setData(ITEMS_MIME, JSON.stringify(payload));
    e.dataTransfer.setData('text/plain', ids.length === 1 ? item.name : `${ids.length} items`);
    e.dataTransfer.effectAllowed = 'copyMove';
  };

  const acceptDrag = (e: DragEvent, target: string) => {
    const files = hasFiles(e.dataTransfer);
    if (!files && !hasItems(e.dataTransfer)) return false;
    if (files && !props.canUpload && target === 'list') return false;
    e.preventDefault();
    e.dataTransfer.dropEffect = files ? 'copy' : isCopyGesture(e) ? 'copy' : 'move';
    setDropTarget(target);
    return true;
  };

  const handleDrop = (e: DragEvent, folder: Resource | null) => {
    e.preventDefault();
    e.stopPropagation();
    setDropTarget(null);
    const dt = e.dataTransfer;
    if (hasItems(dt)) {
      const dragged = readItems(dt);
      if (dragged) props.onDropItems(dragged, folder, isCopyGesture(e));
      return;
    }
    // Files, and folders (uploaded recursively), read while the event lasts.
    const dropped = droppedItems(dt);
    if (dropped.files.length || dropped.folders.length) props.onDropFiles(dropped, folder);
  };

  // Rows get one stable handle to the latest handlers, so memo() lets a row skip rendering
  // unless its own item, selection, focus or drop state changed.
  const actions = useRef<RowActions>(null!);
  actions.current = {
    click: onRowClick,
    open: props.onOpen,
    download: props.onDownload,
    rename: (item, name) => {
      setRenaming(null);
      if (name && name !== item.name) props.onRename(item, name);
      scrollRef.current?.focus({ preventScroll: true });
    },
    dragStart: onDragStartRow,
    dragOver: (e, item) => {
      if (acceptDrag(e, item.id)) e.stopPropagation();
    },
    drop: (e, item) => handleDrop(e, item),
  };

  // Only what is listed counts (a selected item may have been deleted or renamed elsewhere).
  const selectedCount = useMemo(() => (selected.size === 0 ? 0 : items.reduce((n, i) => (selected.has(i.id) ? n + 1 : n), 0)), [items, selected]);
  const activeId = items[focus] ? `row-${focus}` : undefined;
  const virtualItems = virtualizer.getVirtualItems();

  return (
    <div className="list-wrap">
      <div className="list-header" role="presentation">
        <SortButton label="Name" k="name" sort={sort} onSort={setSort} className="col-name" />
        <SortButton label="Size" k="size" sort={sort} onSort={setSort} className="col-size" />
        <SortButton label="Modified" k="modified" sort={sort} onSort={setSort} className="col-modified" />
        <span className="col-actions" />
      </div>
      <div
        ref={scrollRef}
        className={`list-scroll${dropTarget === 'list' ? ' drop-active' : ''}`}
        role="listbox"
        aria-label="Files and folders"
        aria-multiselectable="true"
        aria-activedescendant={activeId}
        aria-busy={props.loading || !props.complete}
        tabIndex={0}
        data-testid="file-list"
        onKeyDown={onKeyDown}
        onClick={(e) => {
          if (e.target === e.currentTarget) setSelection([]);
        }}
        onContextMenu={(e) => {
          e.preventDefault();
          const row = (e.target as HTMLElement).closest<HTMLElement>('[data-testid=file-row]');
          const index = row ? Number(row.dataset.index) : -1;
          if (index >= 0 && items[index]) {
            if (!selected.has(items[index].id)) setSelection([items[index].id], index, index);
            else useUi.getState().setFocus(index);
          } else setSelection([]);
          scrollRef.current?.focus({ preventScroll: true });
          props.onContextMenu({ x: e.clientX, y: e.clientY }, index >= 0);
        }}
        onDragOver={(e) => acceptDrag(e, 'list')}
        onDragLeave={(e) => {
          if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDropTarget(null);
        }}
        onDrop={(e) => handleDrop(e, null)}
      >
        {listPlaceholder({
          loading: props.loading,
          error: props.error,
          empty: items.length === 0,
          emptyTestId: 'list-empty',
          whenEmpty: (
            <>
              <UploadIcon />
              <div>
                <strong>This folder is empty</strong>
                <p>{props.canUpload ? 'Drop files here, or use Upload.' : 'Nothing can be added here.'}</p>
              </div>
            </>
          ),
        }) ?? (
          <div className="list-inner" style={{ height: virtualizer.getTotalSize() }}>
            {virtualItems.map((v) => {
              const item = items[v.index];
              return (
                <Row
                  key={item.id}
                  item={item}
                  index={v.index}
                  top={v.start}
                  selected={selected.has(item.id)}
                  focused={v.index === focus}
                  renaming={renaming === item.id}
                  dropActive={dropTarget === item.id}
                  cut={cut?.has(item.id) ?? false}
                  badge={badges[item.name]}
                  actions={actions}
                />
              );
            })}
          </div>
        )}
      </div>
      <div className="list-footer" aria-live="polite">
        {footerText(props, items.length)}
        {selectedCount > 0 && ` · ${selectedCount.toLocaleString()} selected`}
      </div>
    </div>
  );
}

/** "7 items"; with a filter "1 of 7 items" (what is shown of the folder); "Loading 1,000 of 50,000…". */
function footerText(props: FileListProps, shown: number): string {
  if (props.error) return '';
  const total = props.total.toLocaleString();
  if (!props.complete) return `Loading ${props.loaded.toLocaleString()} of ${total}…${props.filtered ? ` · ${shown.toLocaleString()} shown` : ''}`;
  const noun = `item${props.total === 1 ? '' : 's'}`;
  return props.filtered ? `${shown.toLocaleString()} of ${total} ${noun}` : `${total} ${noun}`;
}

function SortButton(props: { label: string; k: SortKey; sort: { key: SortKey; dir: 'asc' | 'desc' }; onSort(k: SortKey): void; className: string }) {
  const active = props.sort.key === props.k;
  return (
    <button
      type="button"
      className={`sort-btn ${props.className}${active ? ' active' : ''}`}
      onClick={() => props.onSort(props.k)}
      aria-label={`Sort by ${props.label.toLowerCase()}${active ? (props.sort.dir === 'asc' ? ', ascending' : ', descending') : ''}`}
      data-testid={`sort-${props.k}`}
    >
      {props.label}
      <span className="sort-arrow" aria-hidden="true">
        {active ? (props.sort.dir === 'asc' ? '▲' : '▼') : ''}
      </span>
    </button>
  );
}

interface RowActions {
  click(e: MouseEvent, index: number): void;
  open(item: Resource): void;
  download(item: Resource): void;
  rename(item: Resource, name: string): void;
  dragStart(e: DragEvent, index: number): void;
  dragOver(e: DragEvent, item: Resource): void;
  drop(e: DragEvent, item: Resource): void;
}

interface RowProps {
  item: Resource;
  index: number;
  top: number;
  selected: boolean;
  focused: boolean;
  renaming: boolean;
  dropActive: boolean;
  cut: boolean;
  badge?: SyncFileState;
  actions: RefObject<RowActions>;
}

const Row = memo(function Row(p: RowProps) {
  const { item } = p;
  const a = () => p.actions.current!;
  const cls = ['row', p.selected && 'selected', p.focused && 'focused', p.dropActive && 'drop-active', p.cut && 'cut'].filter(Boolean).join(' ');
  return (
    <div
      id={`row-${p.index}`}
      className={cls}
      role="option"
      aria-selected={p.selected}
      style={{ transform: `translateY(${p.top}px)` }}
      data-testid="file-row"
      data-index={p.index}
      data-name={item.name}
      data-kind={item.kind}
      draggable={!p.renaming}
      onClick={(e) => a().click(e, p.index)}
      onDoubleClick={() => a().open(item)}
      onDragStart={(e) => a().dragStart(e, p.index)}
      onDragOver={item.kind === 'folder' ? (e) => a().dragOver(e, item) : undefined}
      onDrop={item.kind === 'folder' ? (e) => a().drop(e, item) : undefined}
    >
      <span className="col-name">
        <span className={`item-icon ${item.kind}`}>{item.kind === 'folder' ? <FolderIcon /> : <FileIcon />}</span>
        {p.renaming ? (
          <RenameInput name={item.name} onDone={(name) => a().rename(item, name)} />
        ) : (
          <span className="item-name" title={nameText(item.name)} data-testid="file-name">
            <Name value={item.name} fit extension={item.kind === 'file'} />
          </span>
        )}
        {p.badge && <SyncBadge state={p.badge} />}
      </span>
      <span className="col-size" data-testid="file-size">
        {item.kind === 'file' ? formatBytes(item.size) : '—'}
      </span>
      <span className="col-modified">{formatDate(item.modified)}</span>
      <span className="col-actions">
        {item.downloadable && (
          <button
            type="button"
            className="icon-btn row-action"
            tabIndex={-1}
            aria-label={`Download ${nameText(item.name)}`}
            data-testid="download"
            onClick={(e) => {
              e.stopPropagation();
              a().download(item);
            }}
          >
            <DownloadIcon />
          </button>
        )}
      </span>
    </div>
  );
});

function RenameInput({ name, onDone }: { name: string; onDone(name: string): void }) {
  const ref = useRef<HTMLInputElement>(null);
  const finished = useRef(false);
  useEffect(() => {
    const input = ref.current;
    if (!input) return;
    input.focus();
    // Select the base name, not the extension, as file managers do.
    const dot = name.lastIndexOf('.');
    input.setSelectionRange(0, dot > 0 ? dot : name.length);
  }, [name]);
  const finish = (value: string) => {
    if (finished.current) return;
    finished.current = true;
    onDone(value.trim());
  };
  return (
    <input
      ref={ref}
      className="rename-input"
      defaultValue={name}
      aria-label="New name"
      data-testid="rename-input"
      onClick={(e) => e.stopPropagation()}
      onDoubleClick={(e) => e.stopPropagation()}
      onKeyDown={(e) => {
        e.stopPropagation();
        if (e.key === 'Enter') finish(e.currentTarget.value);
        if (e.key === 'Escape') finish(name);
      }}
      onBlur={(e) => finish(e.currentTarget.value)}
    />
  );
}
