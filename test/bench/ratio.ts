/**
 * How every bench compares Tributary with a peer: Tributary's speed ÷ the peer's, so a ratio
 * above 1 means Tributary is faster, whichever figure (MB/s, entries/s, seconds) was measured.
 */
export const RATIO_LABEL = '(Tributary ÷ peer, >1 = faster)';

/** From speeds (MB/s, entries/s, requests/s): Tributary's ÷ the peer's. */
export function speedRatio(ours: number | null, peer: number | null): string {
  return ours === null || peer === null ? '—' : `${(ours / peer).toFixed(2)}×`;
}

/** From the times the same work took: the peer's ÷ Tributary's, i.e. the same speed ratio. */
export function timeRatio(oursMs: number, peerMs: number): string {
  return `${(peerMs / oursMs).toFixed(2)}×`;
}
