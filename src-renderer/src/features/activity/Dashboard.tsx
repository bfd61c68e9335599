/**
 * The activity dashboard (spec 3): per account its subscription (AccountSubscription.tsx) and
 * follower state, a live stream of activity (ActivityStream.tsx), webhooks with their delivery
 * attempts (Webhooks.tsx), and the track-activity setting.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { keys, useAccounts, useApi, useConnectors } from '../../api/hooks';
import { toastError } from '../../stores/ui';
import { AccountSubscription } from './AccountSubscription';
import { ActivityStream } from './ActivityStream';
import { Webhooks } from './Webhooks';
import './activity.css';

export function ActivityDashboard() {
  const api = useApi();
  const qc = useQueryClient();
  const accounts = useAccounts();
  const connectors = useConnectors();
  const list = accounts.data ?? [];
  const settings = useQuery({ queryKey: [...keys.activityGlobal, 'settings'], queryFn: () => api.call('activity.settings.get', {}) });
  const followers = useQuery({ queryKey: [...keys.activityGlobal, 'followers'], queryFn: () => api.call('activity.followers', {}) });
  const kindOf = (service: string) => connectors.data?.find((c) => c.id === service);

  return (
    <section className="dashboard" aria-label="Activity" data-testid="activity-dashboard">
      <div className="toolbar">
        <h1 className="dashboard-title">Activity</h1>
        <label className="track-setting">
          <input
            type="checkbox"
            checked={settings.data?.trackActivity ?? false}
            disabled={!settings.data}
            onChange={async (e) => {
              try {
                const next = await api.call('activity.settings.set', { trackActivity: e.target.checked });
                qc.setQueryData([...keys.activityGlobal, 'settings'], next);
              } catch (err) {
                toastError('Could not change the setting', err);
              }
            }}
            data-testid="track-activity"
          />
          Track activity of newly connected accounts
        </label>
      </div>
      <div className="dashboard-body">
        <div className="dashboard-col">
          <h2 className="section-title">Subscriptions</h2>
          {accounts.isLoading && <p className="muted">Loading…</p>}
          <ul className="sub-list">
            {list.map((a) => (
              <AccountSubscription
                key={a.id}
                account={a}
                group={kindOf(a.service)?.group}
                mail={kindOf(a.service)?.kind === 'mail'}
                status={followers.data?.find((f) => f.account === a.id) ?? null}
              />
            ))}
          </ul>
          <Webhooks applicationId={settings.data?.applicationId ?? ''} accounts={list} />
        </div>
        <div className="dashboard-col dashboard-stream">
          <h2 className="section-title">Live activity</h2>
          <ActivityStream accounts={list} />
        </div>
      </div>
    </section>
  );
}
