import { useUi } from '../stores/ui';
import './toasts.css';

/** Error and info messages; errors carry the service's own message text. */
export function Toasts() {
  const toasts = useUi((s) => s.toasts);
  const dismiss = useUi((s) => s.dismiss);
  return (
    <div className="toasts" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast-${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'} data-testid={`toast-${t.kind}`}>
          <div className="toast-text">
            <strong>{t.title}</strong>
            <span>{t.message}</span>
          </div>
          {t.action && (
            <button
              type="button"
              className="btn btn-ghost toast-action"
              data-testid="toast-action"
              onClick={() => {
                dismiss(t.id);
                void t.action!.run();
              }}
            >
              {t.action.label}
            </button>
          )}
          <button type="button" className="icon-btn" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
