/**
 * "Connect an account": pick a service, fill the form generated from its options schema,
 * optionally "Test connection" (accounts.test), then connect (accounts.connect, which verifies
 * again before anything is stored).
 */
import { useMemo, useRef, useState } from 'react';
import type { ConnectorInfo } from '../../../../src-main/contract';
import { errorMessage } from '../../api/client';
import { useQueryClient } from '@tanstack/react-query';
import { keys, useApi, useConnectors } from '../../api/hooks';
import { Dialog } from '../../components/Dialog';
import { ServiceIcon } from '../../components/Icons';
import { useUi } from '../../stores/ui';
import { fieldsOf } from './schema';
import { readOptions, SchemaFields } from './SchemaForm';
import './accounts.css';

type Status = { kind: 'idle' } | { kind: 'busy'; what: string } | { kind: 'ok'; message: string } | { kind: 'error'; message: string };

const GROUP_ORDER = ['local', 'file_store', 'object_store', 'email', 'reference'];
const GROUP_LABEL: Record<string, string> = { local: 'On this computer', file_store: 'File storage', object_store: 'Object storage', email: 'Email', reference: 'For testing' };

export function ConnectDialog({ onClose }: { onClose(): void }) {
  const connectors = useConnectors();
  const [chosen, setChosen] = useState<ConnectorInfo | null>(null);
  return (
    <Dialog title={chosen ? `Connect ${chosen.name}` : 'Connect an account'} onClose={onClose} testId="connect-dialog" wide>
      {chosen ? (
        <ConnectForm connector={chosen} onBack={() => setChosen(null)} onDone={onClose} />
      ) : connectors.isLoading ? (
        <div className="dialog-body">Loading services…</div>
      ) : connectors.error ? (
        <div className="dialog-body form-status error" role="alert">
          {connectors.error.message}
        </div>
      ) : (
        <ServicePicker connectors={connectors.data ?? []} onPick={setChosen} onCancel={onClose} />
      )}
    </Dialog>
  );
}

function ServicePicker({ connectors, onPick, onCancel }: { connectors: ConnectorInfo[]; onPick(c: ConnectorInfo): void; onCancel(): void }) {
  const groups = useMemo(() => {
    // Storage and mail services alike: a mail account opens the mailbox, a storage one the files.
    const byGroup = new Map<string, ConnectorInfo[]>();
    for (const c of connectors) byGroup.set(c.group, [...(byGroup.get(c.group) ?? []), c]);
    return [...byGroup.entries()].sort(([a], [b]) => GROUP_ORDER.indexOf(a) - GROUP_ORDER.indexOf(b));
  }, [connectors]);
  return (
    <>
      <div className="dialog-body">
        {groups.map(([group, list]) => (
          <div key={group} className="service-group">
            <h3 className="service-group-title">{GROUP_LABEL[group] ?? group}</h3>
            <div className="service-grid">
              {list.map((c) => (
                <button key={c.id} type="button" className="service-card" onClick={() => onPick(c)} data-testid={`connector-${c.id}`}>
                  <ServiceIcon group={c.group} service={c.id} />
                  <span>{c.name}</span>
                </button>
              ))}
            </div>
          </div>
        ))}
      </div>
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </>
  );
}

function ConnectForm({ connector, onBack, onDone }: { connector: ConnectorInfo; onBack(): void; onDone(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const fields = useMemo(() => fieldsOf(connector.form), [connector.form]);
  const formRef = useRef<HTMLFormElement>(null);
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const busy = status.kind === 'busy';

  const collect = () => {
    const form = formRef.current!;
    if (!form.reportValidity()) return null;
    try {
      const options = readOptions(form, fields);
      const name = String(new FormData(form).get('__account') ?? '').trim();
      return { options, name };
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
      return null;
    }
  };

  const test = async () => {
    const v = collect();
    if (!v) return;
    setStatus({ kind: 'busy', what: 'Testing the connection…' });
    try {
      await api.call('accounts.test', { service: connector.id, options: v.options });
      setStatus({ kind: 'ok', message: 'Connection works.' });
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
    }
  };

  const connect = async () => {
    const v = collect();
    if (!v) return;
    setStatus({ kind: 'busy', what: 'Connecting…' });
    try {
      const account = await api.call('accounts.connect', { service: connector.id, options: v.options, account: v.name || undefined });
      // Have the new account in the list before switching to it.
      await qc.invalidateQueries({ queryKey: keys.accounts });
      useUi.getState().open(account.id);
      useUi.getState().toast({ kind: 'info', title: 'Account connected', message: `${account.account} (${account.serviceName})` });
      onDone();
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
    }
  };

  return (
    <form
      ref={formRef}
      className="connect-form"
      onSubmit={(e) => {
        e.preventDefault();
        void connect();
      }}
      onInput={() => status.kind !== 'busy' && status.kind !== 'idle' && setStatus({ kind: 'idle' })}
    >
      <div className="dialog-body">
        <SchemaFields fields={fields} />
        <div className="field">
          <label htmlFor="field-__account" className="field-label">
            Display name <span className="muted">(optional)</span>
          </label>
          <input id="field-__account" name="__account" className="input" maxLength={500} data-testid="field-account-name" autoComplete="off" />
        </div>
        <div className={`form-status ${status.kind}`} role={status.kind === 'error' ? 'alert' : 'status'} data-testid="connect-status">
          {status.kind === 'busy' ? status.what : status.kind === 'ok' || status.kind === 'error' ? status.message : ''}
        </div>
      </div>
      <div className="dialog-actions">
        <button type="button" className="btn btn-ghost push-left" onClick={onBack} disabled={busy}>
          ← Services
        </button>
        <button type="button" className="btn" onClick={() => void test()} disabled={busy} data-testid="test-connection">
          Test connection
        </button>
        <button type="submit" className="btn btn-primary" disabled={busy} data-testid="connect-submit">
          Connect
        </button>
      </div>
    </form>
  );
}
