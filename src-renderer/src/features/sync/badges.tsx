/**
 * Per-file sync badges in the file browser (docs/sync.md, *Badges*): the states of a listed
 * folder's entries, asked once per folder and again on `sync.changed` (useServerEvents
 * invalidates every `sync` query).
 */
import { useQuery } from '@tanstack/react-query';
import type { SyncFileState } from '../../../../src-main/contract';
import { useApi } from '../../api/hooks';
import { syncKeys } from './SyncView';
import './sync.css';

const EMPTY: Record<string, SyncFileState> = {};

export function useSyncBadges(account: number, folder: string): Record<string, SyncFileState> {
  const api = useApi();
  const q = useQuery({
    queryKey: [...syncKeys.all, 'states', account, folder],
    queryFn: () => api.call('sync.files.states', { account, folder }),
    // A folder that cannot be located (trash, special ids) simply has no badges.
    retry: false,
  });
  return q.data ?? EMPTY;
}

const LABEL: Record<SyncFileState, string> = { synced: 'Synced', pending: 'Sync pending', conflict: 'Sync conflict' };

export function SyncBadge({ state }: { state: SyncFileState }) {
  return (
    <span className={`file-sync-badge ${state}`} title={LABEL[state]} aria-label={LABEL[state]} data-testid="sync-file-badge" data-state={state}>
      {state}
    </span>
  );
}
