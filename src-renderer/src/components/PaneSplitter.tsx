/** The handle on a pane's right edge: drag it, or focus it and use ←/→ (Home/End for the limits). */
import { PANES, usePanes, type PaneId } from '../stores/panes';

const STEP = 16;

export function PaneSplitter(props: { pane: PaneId; label: string; controls: string; className?: string; testId: string }) {
  const width = usePanes((s) => s.width[props.pane]);
  const resize = usePanes((s) => s.resize);
  const { min, max } = PANES[props.pane];
  return (
    <div
      className={`pane-splitter${props.className ? ` ${props.className}` : ''}`}
      role="separator"
      aria-orientation="vertical"
      aria-label={props.label}
      aria-controls={props.controls}
      aria-valuenow={width}
      aria-valuemin={min}
      aria-valuemax={max}
      tabIndex={0}
      data-testid={props.testId}
      onKeyDown={(e) => {
        if (e.altKey || e.ctrlKey || e.metaKey) return;
        const to = { ArrowLeft: width - STEP, ArrowRight: width + STEP, Home: min, End: max }[e.key];
        if (to === undefined) return;
        e.preventDefault();
        resize(props.pane, to);
      }}
      onPointerDown={(e) => {
        e.preventDefault();
        const startX = e.clientX;
        const el = e.currentTarget;
        el.setPointerCapture(e.pointerId);
        const moveTo = (ev: PointerEvent) => resize(props.pane, width + ev.clientX - startX);
        const stop = () => {
          el.removeEventListener('pointermove', moveTo);
          el.removeEventListener('pointerup', stop);
        };
        el.addEventListener('pointermove', moveTo);
        el.addEventListener('pointerup', stop);
      }}
    />
  );
}
