import type { ActivityItem } from '../../../../src-main/contract/activity';
import './activity.css';

const CHART_MINUTES = 30;

/** Events per minute over the last half hour, from what the stream holds (filters applied). */
export function ActivityChart({ rows }: { rows: Pick<ActivityItem, 'recordedAt'>[] }) {
  const now = Math.floor(Date.now() / 60_000);
  const counts = Array.from({ length: CHART_MINUTES }, () => 0);
  for (const r of rows) {
    const age = now - Math.floor(Date.parse(r.recordedAt) / 60_000);
    if (age >= 0 && age < CHART_MINUTES) counts[CHART_MINUTES - 1 - age]++;
  }
  const max = Math.max(1, ...counts);
  const total = counts.reduce((a, b) => a + b, 0);
  const w = 8;
  return (
    <figure className="activity-chart" data-testid="activity-chart" data-total={total}>
      <svg width={CHART_MINUTES * (w + 2)} height={40} role="img" aria-label={`${total} events in the last ${CHART_MINUTES} minutes`}>
        {counts.map((c, i) => (
          <rect key={i} x={i * (w + 2)} y={40 - (c / max) * 38} width={w} height={(c / max) * 38 || 1} rx={1.5} className={c ? 'bar' : 'bar-empty'}>
            <title>{`${c} event${c === 1 ? '' : 's'}, ${CHART_MINUTES - 1 - i} min ago`}</title>
          </rect>
        ))}
      </svg>
      <figcaption className="muted small">Events per minute, last {CHART_MINUTES} minutes</figcaption>
    </figure>
  );
}
