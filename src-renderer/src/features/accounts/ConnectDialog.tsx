/**
 * "Connect an account": pick a service (those offered to users: not the in-memory reference),
 * fill the form generated from its options schema (its first field focused; `internal` options
 * left out by the main process), optionally "Test connection" (accounts.test), then connect
 * (accounts.connect, which verifies again before anything is stored). A server identity never
 * seen before (an SSH host key) is shown with its fingerprint and must be confirmed first.
 *
 * Settings found for an address (mail autodiscovery) go into the form with `fillForm`
 * (SchemaForm.tsx), the way Reconnect fills in an account's saved settings.
 */
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type RefObject } from 'react';
import type { ConnectorInfo, ProcedureOutput } from '../../../../src-main/contract';
import { ApiError, errorMessage } from '../../api/client';
import { useQueryClient } from '@tanstack/react-query';
import { keys, useApi, useConnectors } from '../../api/hooks';
import { Dialog } from '../../components/Dialog';
import { named, plain } from '../../components/Name';
import { ServiceIcon } from '../../components/Icons';
import { useUi } from '../../stores/ui';
import { fieldsOf } from './schema';
import { fillForm, readOptions, SchemaFields } from './SchemaForm';
import './accounts.css';

type Status = { kind: 'idle' } | { kind: 'busy'; what: string } | { kind: 'ok'; message: string } | { kind: 'error'; message: string };

const GROUP_ORDER = ['local', 'file_store', 'object_store', 'email'];
const GROUP_LABEL: Record<string, string> = { local: 'On this computer', file_store: 'File storage', object_store: 'Object storage', email: 'Email' };

type Identity = NonNullable<ProcedureOutput<'accounts.identity'>>;

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
        <ServicePicker connectors={(connectors.data ?? []).filter((c) => c.offered)} onPick={setChosen} onCancel={onClose} />
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

const SOURCES: Record<ProcedureOutput<'mail.discover'>['source'], string> = {
  autoconfig: "the provider's configuration file (autoconfig)",
  srv: "the domain's DNS records (RFC 6186)",
  guess: 'common server names that answered',
};

/**
 * Mail: "Set up from an address". The address and password fill the form: mail.discover finds
 * the IMAP/SMTP settings (docs/mail.md, Setting up from an address), which stay editable below;
 * the status says where they came from, or that nothing was found.
 */
function FromAddress({ form, fields }: { form: RefObject<HTMLFormElement | null>; fields: ReturnType<typeof fieldsOf> }) {
  const api = useApi();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const find = async () => {
    if (!email.trim()) return setStatus({ kind: 'error', message: 'Enter your e-mail address first.' });
    setStatus({ kind: 'busy', what: 'Looking for the settings…' });
    try {
      const found = await api.call('mail.discover', { email: email.trim() });
      if (form.current) fillForm(form.current, fields, { ...found.options, ...(password ? { password } : {}) });
      setStatus({ kind: 'ok', message: `Settings found from ${SOURCES[found.source]}. Check them below, then Test connection.` });
    } catch (e) {
      // not_found says itself that the servers are to be entered by hand.
      const notFound = e instanceof ApiError && e.code === 'not_found';
      setStatus({ kind: 'error', message: notFound ? errorMessage(e) : `Could not look for the settings: ${errorMessage(e)}` });
    }
  };
  const enter = (e: KeyboardEvent) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    void find();
  };
  return (
    <fieldset className="from-address" data-testid="from-address">
      <legend className="field-label">Set up from an address</legend>
      <div className="field">
        <label htmlFor="discover-email" className="field-label">
          E-mail address
        </label>
        <input id="discover-email" className="input" type="email" autoComplete="email" value={email} onChange={(e) => setEmail(e.target.value)} onKeyDown={enter} data-testid="discover-email" />
      </div>
      <div className="field">
        <label htmlFor="discover-password" className="field-label">
          Password
        </label>
        <input id="discover-password" className="input" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} onKeyDown={enter} data-testid="discover-password" />
      </div>
      <button type="button" className="btn" onClick={() => void find()} disabled={status.kind === 'busy'} data-testid="discover-find">
        Find settings
      </button>
      <div className={`form-status ${status.kind}`} role={status.kind === 'error' ? 'alert' : 'status'} data-testid="discover-status">
        {status.kind === 'busy' ? status.what : status.kind === 'ok' || status.kind === 'error' ? status.message : ''}
      </div>
    </fieldset>
  );
}

function ConnectForm({ connector, onBack, onDone }: { connector: ConnectorInfo; onBack(): void; onDone(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const fields = useMemo(() => fieldsOf(connector.form), [connector.form]);
  const formRef = useRef<HTMLFormElement>(null);
  const [status, setStatus] = useState<Status>({ kind: 'idle' });
  const [identity, setIdentity] = useState<{ identity: Identity; resume: 'test' | 'connect' } | null>(null);
  const busy = status.kind === 'busy';

  useEffect(() => {
    formRef.current?.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea')?.focus();
  }, []);

  /**
   * Whether the server's identity is settled: true when there is nothing to confirm; else the
   * fingerprint is shown and the action resumes once the user trusts it.
   */
  const identitySettled = async (options: Record<string, unknown>, resume: 'test' | 'connect') => {
    setStatus({ kind: 'busy', what: 'Contacting the server…' });
    const found = await api.call('accounts.identity', { service: connector.id, options });
    if (!found) return true;
    setStatus({ kind: 'idle' });
    setIdentity({ identity: found, resume });
    return false;
  };

  const trust = (found: Identity, resume: 'test' | 'connect') => {
    const input = formRef.current?.elements.namedItem(found.option);
    if (input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement) input.value = found.value;
    setIdentity(null);
    void (resume === 'test' ? test() : connect());
  };

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
    try {
      if (!(await identitySettled(v.options, 'test'))) return;
      setStatus({ kind: 'busy', what: 'Testing the connection…' });
      await api.call('accounts.test', { service: connector.id, options: v.options });
      setStatus({ kind: 'ok', message: 'Connection works.' });
    } catch (e) {
      setStatus({ kind: 'error', message: errorMessage(e) });
    }
  };

  const connect = async () => {
    const v = collect();
    if (!v) return;
    try {
      if (!(await identitySettled(v.options, 'connect'))) return;
      setStatus({ kind: 'busy', what: 'Connecting…' });
      const account = await api.call('accounts.connect', { service: connector.id, options: v.options, account: v.name || undefined });
      // Have the new account in the list before switching to it.
      await qc.invalidateQueries({ queryKey: keys.accounts });
      useUi.getState().open(account.id);
      useUi.getState().toast({ kind: 'info', title: 'Account connected', message: named`${account.account} (${plain(account.serviceName)})` });
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
        {connector.id === 'imap' && <FromAddress form={formRef} fields={fields} />}
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
      {identity && (
        <div className="identity-confirm" role="alertdialog" aria-labelledby="identity-title" aria-describedby="identity-text" data-testid="identity-confirm">
          <h3 id="identity-title">Is this the right server?</h3>
          <p id="identity-text">
            Tributary has never connected to this server before. Its identity is {identity.identity.what}, with the fingerprint
          </p>
          <code className="fingerprint" data-testid="identity-fingerprint">
            {identity.identity.fingerprint}
          </code>
          <p className="muted">Compare it with the fingerprint your server's administrator gives you (on the server: <code>ssh-keygen -lf</code> on its host key). If they differ, someone may be intercepting the connection: do not continue.</p>
          <div className="identity-actions">
            <button type="button" className="btn" onClick={() => setIdentity(null)} data-testid="identity-cancel">
              Cancel
            </button>
            <button type="button" className="btn btn-primary" onClick={() => trust(identity.identity, identity.resume)} data-testid="identity-trust" autoFocus>
              Trust and continue
            </button>
          </div>
        </div>
      )}
      <div className="dialog-actions">
        <button type="button" className="btn btn-ghost push-left" onClick={onBack} disabled={busy}>
          ← Services
        </button>
        <button type="button" className="btn" onClick={() => void test()} disabled={busy || identity !== null} data-testid="test-connection">
          Test connection
        </button>
        <button type="submit" className="btn btn-primary" disabled={busy || identity !== null} data-testid="connect-submit">
          Connect
        </button>
      </div>
    </form>
  );
}
