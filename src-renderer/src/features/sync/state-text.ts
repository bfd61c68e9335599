/**
 * What the Sync view says about a pair (docs/sync.md, *Pairs*): up to date / syncing N files /
 * paused / error / waiting for you, and the number of open conflicts next to it.
 */
import type { SyncPair } from '../../../../src-main/contract';

type PairState = Pick<SyncPair, 'paused' | 'state' | 'pending' | 'error'>;

export function stateText(p: PairState): string {
  if (p.paused) return 'Paused';
  switch (p.state) {
    case 'syncing':
      return p.pending > 0 ? `Syncing ${p.pending} file${p.pending === 1 ? '' : 's'}` : 'Syncing…';
    case 'error':
      return `Error: ${p.error ?? 'unknown'}`;
    case 'held':
    case 'refused':
      return `Waiting for you: ${p.error ?? ''}`;
    default:
      return 'Up to date';
  }
}

export const conflictsText = (n: number): string => `${n} conflict${n === 1 ? '' : 's'}`;
