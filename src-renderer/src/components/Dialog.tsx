/**
 * A modal on the native <dialog>: the browser traps focus, makes the page behind inert and
 * closes on Escape, which is exactly the accessible behaviour we want.
 */
import { useEffect, useRef, type ReactNode } from 'react';
import './dialog.css';

export function Dialog(props: { title: ReactNode; onClose(): void; children: ReactNode; testId?: string; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  // What had the focus before the dialog opened (read while rendering, before anything moves it).
  const returnTo = useRef<Element | null>(typeof document === 'undefined' ? null : document.activeElement);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    // showModal() focuses the first control; move to the one the dialog marks as default.
    const first = d?.querySelector<HTMLElement>('[data-autofocus]');
    first?.focus();
    if (first instanceof HTMLInputElement) first.select();
    return () => {
      if (d?.open) d.close();
      restoreFocus(returnTo.current);
    };
  }, []);
  return (
    <dialog
      ref={ref}
      className={props.wide ? 'dialog dialog-wide' : 'dialog'}
      aria-labelledby="dialog-title"
      data-testid={props.testId}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <h2 id="dialog-title" className="dialog-title">
        {props.title}
      </h2>
      {props.children}
    </dialog>
  );
}

/**
 * Closed (Escape, Cancel or done), a dialog gives the focus back to what had it, so the keyboard
 * carries on where it was; when that is gone (a menu that opened it), to the file list.
 */
function restoreFocus(before: Element | null): void {
  // Another dialog opened meanwhile (a question after this one) keeps its own focus.
  if (document.querySelector('dialog[open]')) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  const target = before instanceof HTMLElement && before.isConnected && before !== document.body ? before : document.querySelector<HTMLElement>('[data-testid=file-list]');
  target?.focus({ preventScroll: true });
}

/** Yes/no confirmation, the destructive button styled as such. */
export function ConfirmDialog(props: { title: ReactNode; message: ReactNode; confirm: string; danger?: boolean; onConfirm(): void; onClose(): void; testId?: string }) {
  return (
    <Dialog title={props.title} onClose={props.onClose} testId={props.testId}>
      <div className="dialog-body">{props.message}</div>
      <DialogActions
        confirm={props.confirm}
        danger={props.danger}
        testId="confirm-ok"
        // Destructive confirmations start on Cancel, so a stray Enter deletes nothing.
        autofocus={!props.danger}
        onConfirm={props.onConfirm}
        onClose={props.onClose}
      />
    </Dialog>
  );
}

/** Cancel, then the confirming button: it runs `onConfirm`, then closes the dialog. */
export function DialogActions(props: { confirm: ReactNode; onConfirm(): void; onClose(): void; testId: string; danger?: boolean; disabled?: boolean; autofocus?: boolean }) {
  return (
    <div className="dialog-actions">
      <button type="button" className="btn" onClick={props.onClose}>
        Cancel
      </button>
      <button
        type="button"
        className={props.danger ? 'btn btn-danger' : 'btn btn-primary'}
        disabled={props.disabled}
        data-testid={props.testId}
        data-autofocus={props.autofocus ? true : undefined}
        onClick={() => {
          props.onConfirm();
          props.onClose();
        }}
      >
        {props.confirm}
      </button>
    </div>
  );
}

/** Asks for one name (new folder, account rename). */
export function PromptDialog(props: { title: ReactNode; label: string; initial?: string; confirm: string; onSubmit(value: string): void; onClose(): void; testId?: string }) {
  return (
    <Dialog title={props.title} onClose={props.onClose} testId={props.testId}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const value = String(new FormData(e.currentTarget).get('value') ?? '').trim();
          if (!value) return;
          props.onSubmit(value);
          props.onClose();
        }}
      >
        <label className="field">
          <span className="field-label">{props.label}</span>
          <input name="value" className="input" defaultValue={props.initial} data-autofocus required data-testid="prompt-input" />
        </label>
        <div className="dialog-actions">
          <button type="button" className="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" data-testid="prompt-ok">
            {props.confirm}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
