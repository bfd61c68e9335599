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

/**
 * One cell of the table `npm run bench` ends with (scripts/bench.mjs collects them from every
 * bench's output): a ratio against a peer (`value` = Tributary's speed ÷ the peer's), or a plain
 * figure with its unit (req/s, ms, MiB).
 */
export interface SummaryCell {
  /** Row: the backend or subject ("WebDAV (Apache)", "REST", "memory"). */
  row: string;
  /** Column: what was measured ("upload", "download", "listing", "listing req/s @10"). */
  column: string;
  /** The peer the ratio is against ("rclone", "curl"); absent for a plain figure. */
  peer?: string;
  value: number;
  /** Unit of a plain figure ("req/s", "ms", "MiB"); absent for a ratio. */
  unit?: string;
}

/** The marker scripts/bench.mjs looks for; one JSON cell per line. */
export const SUMMARY_MARKER = 'BENCH-SUMMARY ';

export function summary(cells: SummaryCell[]): void {
  for (const c of cells) if (Number.isFinite(c.value)) console.log(SUMMARY_MARKER + JSON.stringify(c));
}

/** Ratio cells of one backend against one peer, from the two sides' speeds (null: not measured). */
export function ratioCells(
  row: string,
  peer: string,
  ours: { upload?: number | null; download?: number | null; listing?: number | null },
  theirs: { upload?: number | null; download?: number | null; listing?: number | null },
): SummaryCell[] {
  const cells: SummaryCell[] = [];
  for (const column of ['upload', 'download', 'listing'] as const) {
    const a = ours[column];
    const b = theirs[column];
    if (a != null && b != null && b > 0) cells.push({ row, column, peer, value: a / b });
  }
  return cells;
}
