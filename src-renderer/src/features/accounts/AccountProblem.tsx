/**
 * A broken account, shown once in the pane instead of its files or mail: what went wrong, in
 * words, with Reconnect (new credentials, tested before they are saved) and Retry (the stored
 * ones). Spec 1: an account deactivated automatically comes back only by reconnecting.
 * Also the Reconnect dialog, which the account menu opens too.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import type { Account } from '../../../../src-main/contract';
import { ApiError, errorMessage } from '../../api/client';
import { keys, useApi, useConnectors } from '../../api/hooks';
import { Dialog } from '../../components/Dialog';
import { Name, named, plain } from '../../components/Name';
import { useUi } from '../../stores/ui';
import { fieldsOf } from './schema';
import { fillForm, readOptions, SchemaFields } from './SchemaForm';
import './accounts.css';

/** Error codes that are about the account (credentials, server), not about one file or folder. */
export const ACCOUNT_ERROR_CODES = new Set(['upstream_auth_failed', 'service_not_available', 'request_timeout']);

export const isAccountError = (e: unknown): e is ApiError => e instanceof ApiError && ACCOUNT_ERROR_CODES.has(e.code);

/** Deactivated by Tributary (credentials refused, unreachable), not by the user. */
export const needsReconnect = (a: Account) => !a.active && a.disableReason !== null && a.disableReason !== 'deactivated_by_user';

function headline(a: Account, error?: ApiError | null): { title: string; detail: string } {
  if (!a.active && a.disableReason === 'credentials_refused') {
    return { title: `${a.serviceName} refused the saved credentials`, detail: 'The password or key may have changed on the server. Reconnect with the new one.' };
  }
  if (!a.active && a.disableReason === 'unreachable') {
    const since = a.unreachableSince ? new Date(a.unreachableSince).toLocaleString() : null;
    return { title: `${a.serviceName} could not be reached${since ? ` since ${since}` : ''}`, detail: 'Tributary stopped trying. Retry when the server is back, or reconnect with other settings.' };
  }
  if (!a.active) return { title: 'This account is disabled', detail: 'Enable it to use it again.' };
  if (error?.code === 'upstream_auth_failed') return { title: `${a.serviceName} refused the saved credentials`, detail: 'Reconnect with the new password or key.' };
  return { title: `${a.serviceName} cannot be reached right now`, detail: 'Retry in a moment, or reconnect with other settings.' };
}

export function AccountProblem({ account, error, onRetry }: { account: Account; error?: unknown; onRetry?(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const [reconnecting, setReconnecting] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const apiError = error instanceof ApiError ? error : null;
  const { title, detail } = headline(account, apiError);
  const said = account.active ? apiError?.message : account.disableMessage;

  const retry = async () => {
    setFailure(null);
    setBusy('Trying again…');
    try {
      // An active account only needs its listing again; an inactive one must connect first.
      if (account.active) onRetry?.();
      else await api.call('accounts.reconnect', { id: account.id });
      await qc.invalidateQueries({ queryKey: keys.accounts });
    } catch (e) {
      setFailure(errorMessage(e));
    } finally {
      setBusy(null);
    }
  };

  const enable = async () => {
    setBusy('Enabling…');
    try {
      await api.call('accounts.update', { id: account.id, active: true });
    } catch (e) {
      setFailure(errorMessage(e));
    } finally {
      setBusy(null);
    }
  };

  const userDisabled = !account.active && !needsReconnect(account);
  return (
    <section className="account-problem" role="alert" aria-labelledby="account-problem-title" data-testid="account-problem" data-reason={account.active ? (apiError?.code ?? 'error') : (account.disableReason ?? '')}>
      <h2 id="account-problem-title">{title}</h2>
      <p className="account-problem-name">
        <Name value={account.account} /> · {account.serviceName}
      </p>
      <p>{detail}</p>
      {said && (
        <p className="account-problem-said" data-testid="account-problem-said">
          The server said: {said}
        </p>
      )}
      {failure && (
        <p className="form-status error" data-testid="account-problem-failure">
          {failure}
        </p>
      )}
      <div className="account-problem-actions">
        {userDisabled ? (
          <button type="button" className="btn btn-primary" onClick={() => void enable()} disabled={busy !== null} data-testid="account-enable">
            Enable
          </button>
        ) : (
          <>
            <button type="button" className="btn btn-primary" onClick={() => setReconnecting(true)} disabled={busy !== null} data-testid="account-reconnect">
              Reconnect…
            </button>
            <button type="button" className="btn" onClick={() => void retry()} disabled={busy !== null} data-testid="account-retry">
              Retry
            </button>
          </>
        )}
        {busy && <span className="muted" role="status">{busy}</span>}
      </div>
      {reconnecting && <ReconnectDialog account={account} onClose={() => setReconnecting(false)} onDone={onRetry} />}
    </section>
  );
}

type Status = { kind: 'idle' } | { kind: 'busy'; what: string } | { kind: 'ok'; message: string } | { kind: 'error'; message: string };

/**
 * Reconnect: the account's settings (secrets blank: left blank, the saved one is kept), Test,
 * then Save, which connects with them before anything is stored and re-activates the account.
 */
export function ReconnectDialog({ account, onClose, onDone }: { account: Account; onClose(): void; onDone?(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const connectors = useConnectors();
  const connector = connectors.data?.find((c) => c.id === account.service);
  const fields = useMemo(() => (connector ? fieldsOf(connector.form) : []), [connector]);
  const formRef = useRef<HTMLFormElement>(null);
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const busy = status.kind === 'busy';

  // The saved settings, in the form; the first secret field (the password, usually) takes the focus.
  useEffect(() => {
    const form = formRef.current;
    if (!form) return;
    fillForm(form, fields, account.settings);
    const secret = form.querySelector<HTMLInputElement>('input[type=password]');
    (secret ?? form.querySelector<HTMLElement>('input, select, textarea'))?.focus();
  }, [fields, account.settings]);

  const collect = () => {
    const form = formRef.current!;
    try {
      return readOptions(form, fields.map((f) => ({ ...f, required: false })));
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
      return null;
    }
  };

  const test = async () => {
    const options = collect();
    if (!options) return;
    setStatus({ kind: 'busy', what: 'Testing the connection…' });
    try {
      // With `account`, blank fields (the secrets) are the saved ones.
      await api.call('accounts.test', { service: account.service, options, account: account.id });
      setStatus({ kind: 'ok', message: 'Connection works.' });
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
    }
  };

  const save = async () => {
    const options = collect();
    if (!options) return;
    setStatus({ kind: 'busy', what: 'Reconnecting…' });
    try {
      await api.call('accounts.reconnect', { id: account.id, options });
      await qc.invalidateQueries({ queryKey: keys.accounts });
      useUi.getState().toast({ kind: 'info', title: 'Account reconnected', message: named`${account.account} (${plain(account.serviceName)})` });
      onDone?.();
      onClose();
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
    }
  };

  return (
    <Dialog title={named`Reconnect “${account.account}”`} onClose={onClose} testId="reconnect-dialog" wide>
      <form
        ref={formRef}
        className="connect-form"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
        onInput={() => status.kind !== 'busy' && status.kind !== 'idle' && setStatus({ kind: 'idle' })}
      >
        <div className="dialog-body">
          <p className="muted">Saved passwords and keys are not shown: leave a field blank to keep what is saved.</p>
          <SchemaFields fields={fields.map((f) => ({ ...f, required: false }))} />
          <div className={`form-status ${status.kind}`} role={status.kind === 'error' ? 'alert' : 'status'} data-testid="reconnect-status">
            {status.kind === 'busy' ? status.what : status.kind === 'ok' || status.kind === 'error' ? status.message : ''}
          </div>
        </div>
        <div className="dialog-actions">
          <button type="button" className="btn btn-ghost push-left" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button type="button" className="btn" onClick={() => void test()} disabled={busy} data-testid="reconnect-test">
            Test connection
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy} data-testid="reconnect-save">
            Save and reconnect
          </button>
        </div>
      </form>
    </Dialog>
  );
}

