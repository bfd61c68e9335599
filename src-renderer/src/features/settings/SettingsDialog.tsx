/**
 * Settings: the localhost REST API (its address, API keys: create, list, revoke — the same keys
 * as `serve keys …`), whether `retrieve_tokens=true` may return credentials, which private
 * addresses upload-from-URL and webhooks may reach, the public base URL of mail tracking links,
 * and a new web UI link (rotating the UI token).
 */
import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { errorMessage, rememberToken } from '../../api/client';
import { useApi, useAppInfo, useSettings } from '../../api/hooks';
import { Dialog } from '../../components/Dialog';
import { SecondsSetting } from '../../components/SecondsSetting';
import { formatDate } from '../../components/format';
import { isAllowListEntry } from '../../../../src-main/contract/network';
import { toastError } from '../../stores/ui';
import './settings.css';

const KEYS = ['settings', 'apiKeys'] as const;

export function SettingsDialog({ onClose }: { onClose(): void }) {
  const api = useApi();
  const qc = useQueryClient();
  const info = useAppInfo();
  const keys = useQuery({ queryKey: KEYS, queryFn: () => api.call('apiKeys.list', {}) });
  const settings = useSettings();
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [trackingUrl, setTrackingUrl] = useState<string | null>(null);
  const [notifyAfter, setNotifyAfter] = useState<string | null>(null);
  // Shown at once when toggled; the saved value wins again once it is read back.
  const [retrieveTokens, setRetrieveTokens] = useState<boolean | null>(null);
  const [allowPrivate, setAllowPrivate] = useState<boolean | null>(null);
  const [allowedHosts, setAllowedHosts] = useState<string | null>(null);
  const [newUiUrl, setNewUiUrl] = useState<string | null>(null);

  const rotateUiToken = () =>
    void run(async () => {
      if (!window.confirm('Make a new web UI link? The current link stops working at once, in every open browser tab.')) return;
      const r = await api.call('uiToken.rotate', {});
      if (api.mode === 'ws') {
        // This tab carries on with the new token; the server has closed the old connection.
        rememberToken(r.token);
        window.location.reload();
        return;
      }
      setNewUiUrl(r.url);
    });

  const run = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (e) {
      toastError('Settings', errorMessage(e));
    }
    await qc.invalidateQueries({ queryKey: ['settings'] });
  };

  return (
    <Dialog title="Settings" onClose={onClose} testId="settings-dialog" wide>
      <div className="dialog-body settings">
        <h3 className="section-title">Local REST API</h3>
        <p className="muted small">
          Scripts and client libraries reach your accounts at <code data-testid="api-url">{info.data?.apiUrl ?? 'this address'}</code> with an API key
          (<code>Authorization: APIKey …</code>). See the README for the routes.
        </p>
        <table className="settings-table" data-testid="api-keys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Status</th>
              <th>Last used</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {(keys.data ?? []).map((k) => (
              <tr key={k.id} data-testid="api-key-row" data-name={k.name} data-active={k.active}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.active ? 'Active' : 'Revoked'}</td>
                <td>{k.lastUsed ? formatDate(k.lastUsed) : 'Never'}</td>
                <td>
                  {k.active && (
                    <button type="button" className="btn btn-small btn-danger" onClick={() => void run(() => api.call('apiKeys.revoke', { id: k.id }))} data-testid="api-key-revoke">
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {keys.data?.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  No API keys yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
        <form
          className="settings-row"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              const r = await api.call('apiKeys.create', { name: name.trim() });
              setCreated({ name: r.apiKey.name, key: r.key });
              setName('');
            });
          }}
        >
          <input className="input input-small" required maxLength={200} placeholder="Name, e.g. backup script" value={name} onChange={(e) => setName(e.target.value)} aria-label="New API key name" data-testid="api-key-name" />
          <button type="submit" className="btn btn-small" data-testid="api-key-create">
            Create API key
          </button>
        </form>
        {created && (
          <div className="settings-secret" role="status">
            <label htmlFor="new-api-key">
              The key “{created.name}”. Copy it now: it is shown only once.
            </label>
            <input id="new-api-key" className="input" readOnly value={created.key} onFocus={(e) => e.currentTarget.select()} data-testid="api-key-secret" />
          </div>
        )}

        <h3 className="section-title">Web UI link</h3>
        <p className="muted small">
          A browser opens Tributary with the link <code>serve</code> printed, which carries a secret token. Make a new one if that link was shared or
          leaked: the old link stops working everywhere.
        </p>
        <div className="settings-row">
          <button type="button" className="btn btn-small btn-danger" onClick={rotateUiToken} data-testid="ui-token-rotate">
            Make a new web UI link
          </button>
        </div>
        {newUiUrl && (
          <div className="settings-secret" role="status">
            <label htmlFor="new-ui-url">The new web UI link:</label>
            <input id="new-ui-url" className="input" readOnly value={newUiUrl} onFocus={(e) => e.currentTarget.select()} data-testid="ui-token-url" />
          </div>
        )}

        <h3 className="section-title">Credentials over the API</h3>
        <label className="settings-check">
          <input
            type="checkbox"
            checked={retrieveTokens ?? settings.data?.retrieveTokens ?? false}
            disabled={!settings.data}
            onChange={(e) => {
              const value = e.target.checked;
              setRetrieveTokens(value);
              void run(() => api.call('settings.set', { retrieveTokens: value })).then(() => setRetrieveTokens(null));
            }}
            data-testid="setting-retrieve-tokens"
          />
          Allow <code>retrieve_tokens=true</code> to return account credentials (passwords, keys) to API clients
        </label>

        <h3 className="section-title">Network</h3>
        <p className="muted small">
          Upload from a URL and webhooks reach only public addresses unless allowed here: this computer, your local network and cloud metadata
          addresses are refused by default.
        </p>
        <label className="settings-check">
          <input
            type="checkbox"
            checked={allowPrivate ?? settings.data?.allowPrivateNetwork ?? false}
            disabled={!settings.data}
            onChange={(e) => {
              const value = e.target.checked;
              setAllowPrivate(value);
              void run(() => api.call('settings.set', { allowPrivateNetwork: value })).then(() => setAllowPrivate(null));
            }}
            data-testid="setting-allow-private"
          />
          Allow every private and local address (self-hosted servers)
        </label>
        <form
          className="settings-row"
          onSubmit={(e) => {
            e.preventDefault();
            const entries = (allowedHosts ?? settings.data?.allowedHosts.join(', ') ?? '').split(/[\s,]+/).filter(Boolean);
            const bad = entries.find((x) => !isAllowListEntry(x));
            if (bad) return toastError('Settings', `"${bad}" is not a host name, an IP address or a CIDR range such as 192.168.1.0/24.`);
            void run(() => api.call('settings.set', { allowedHosts: entries })).then(() => setAllowedHosts(null));
          }}
        >
          <input
            className="input input-small"
            placeholder="nas.local, 192.168.1.0/24"
            value={allowedHosts ?? settings.data?.allowedHosts.join(', ') ?? ''}
            onChange={(e) => setAllowedHosts(e.target.value)}
            aria-label="Private hosts and ranges to allow"
            data-testid="setting-allowed-hosts"
          />
          <button type="submit" className="btn btn-small" data-testid="setting-allowed-hosts-save">
            Save
          </button>
        </form>
        <p className="muted small">Only these private hosts, addresses or ranges (comma-separated), when not every private address is allowed.</p>

        <h3 className="section-title">Transfers</h3>
        <form
          className="settings-row"
          onSubmit={(e) => {
            e.preventDefault();
            const text = (notifyAfter ?? '').trim();
            const value = text === '' ? null : Number(text);
            if (value !== null && (!Number.isInteger(value) || value < 0)) return toastError('Settings', 'Enter a whole number of seconds, or leave it empty for never.');
            void run(() => api.call('settings.set', { notifyAfterSeconds: value })).then(() => setNotifyAfter(null));
          }}
        >
          <label htmlFor="setting-notify-after">Notify when a transfer that took at least</label>
          <input
            id="setting-notify-after"
            className="input input-small input-number"
            inputMode="numeric"
            placeholder="never"
            value={notifyAfter ?? (settings.data ? String(settings.data.notifyAfterSeconds ?? '') : '')}
            onChange={(e) => setNotifyAfter(e.target.value)}
            data-testid="setting-notify-after"
          />
          <span>seconds ends</span>
          <button type="submit" className="btn btn-small" data-testid="setting-notify-save">
            Save
          </button>
        </form>
        <p className="muted small">A desktop notification while Tributary is in the background, a message while it is in front. Empty: never.</p>

        <h3 className="section-title">Live folders</h3>
        <SecondsSetting
          id="setting-poll-seconds"
          className="settings-row"
          label="Look for changes in the open folder every"
          seconds={settings.data?.folderPollSeconds}
          title="Settings"
          testId="setting-poll-seconds"
          save={(folderPollSeconds) => run(() => api.call('settings.set', { folderPollSeconds }))}
        />
        <p className="muted small">For servers that cannot announce changes (WebDAV, SFTP, SMB, S3, Azure). The local folder is watched and shows changes at once.</p>

        <h3 className="section-title">Mail tracking</h3>
        <form
          className="settings-row"
          onSubmit={(e) => {
            e.preventDefault();
            const value = (trackingUrl ?? settings.data?.trackingBaseUrl ?? '').trim();
            void run(() => api.call('settings.set', { trackingBaseUrl: value || null }));
          }}
        >
          <input
            className="input input-small"
            type="url"
            placeholder="https://track.example.com"
            value={trackingUrl ?? settings.data?.trackingBaseUrl ?? ''}
            onChange={(e) => setTrackingUrl(e.target.value)}
            aria-label="Public base URL of tracking links"
            data-testid="setting-tracking-url"
          />
          <button type="submit" className="btn btn-small" data-testid="setting-tracking-save">
            Save
          </button>
        </form>
        <p className="muted small">Opens and clicks are recorded only when this address reaches Tributary's /t/ endpoints.</p>
      </div>
      <div className="dialog-actions">
        <button type="button" className="btn btn-primary" onClick={onClose} data-autofocus data-testid="settings-close">
          Done
        </button>
      </div>
    </Dialog>
  );
}
