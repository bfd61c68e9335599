/**
 * The `settings.*` and `apiKeys.*` procedures.
 */
import type { SettingsStore } from '../cache/queries/settings';
import type { Handlers, Settings } from '../contract';
import { DEFAULT_NOTIFY_AFTER_SECONDS } from '../contract/transfers';
import type { ApiKeysService } from '../services/api-keys';
import { outboundPolicy } from '../services/outbound';
import { DEFAULT_POLL_SECONDS } from '../services/folder-watch';
import { SETTING_FOLDER_POLL_SECONDS, SETTING_NOTIFY_AFTER_SECONDS, SETTING_OUTBOUND_ALLOWED_HOSTS, SETTING_OUTBOUND_ALLOW_PRIVATE, SETTING_RETRIEVE_TOKENS, SETTING_TRACKING_BASE_URL } from '../services/settings-keys';

export function settingsHandlers(settings: SettingsStore, apiKeys: ApiKeysService): Pick<Handlers, `settings.${string}` & keyof Handlers | `apiKeys.${string}` & keyof Handlers> {
  return {
    'apiKeys.list': async () => apiKeys.list(),
    'apiKeys.create': async ({ name }) => apiKeys.create(name),
    'apiKeys.revoke': async ({ id }) => apiKeys.revoke(id),
    'settings.get': async () => settingsView(settings),
    'settings.set': async ({ retrieveTokens, trackingBaseUrl, notifyAfterSeconds, allowPrivateNetwork, allowedHosts, folderPollSeconds }) => {
      if (retrieveTokens !== undefined) settings.set(SETTING_RETRIEVE_TOKENS, retrieveTokens);
      if (allowPrivateNetwork !== undefined) settings.set(SETTING_OUTBOUND_ALLOW_PRIVATE, allowPrivateNetwork);
      if (allowedHosts !== undefined) settings.set(SETTING_OUTBOUND_ALLOWED_HOSTS, [...new Set(allowedHosts.filter(Boolean))]);
      if (trackingBaseUrl !== undefined) settings.set(SETTING_TRACKING_BASE_URL, trackingBaseUrl);
      if (notifyAfterSeconds !== undefined) settings.set(SETTING_NOTIFY_AFTER_SECONDS, notifyAfterSeconds);
      if (folderPollSeconds !== undefined) settings.set(SETTING_FOLDER_POLL_SECONDS, folderPollSeconds);
      return settingsView(settings);
    },
  };
}

function settingsView(settings: SettingsStore): Settings {
  return {
    retrieveTokens: settings.get<boolean>(SETTING_RETRIEVE_TOKENS, false),
    trackingBaseUrl: settings.get<string | null>(SETTING_TRACKING_BASE_URL, null),
    notifyAfterSeconds: settings.get<number | null>(SETTING_NOTIFY_AFTER_SECONDS, DEFAULT_NOTIFY_AFTER_SECONDS),
    allowPrivateNetwork: outboundPolicy(settings).allowPrivate,
    allowedHosts: outboundPolicy(settings).allowedHosts,
    folderPollSeconds: settings.get<number>(SETTING_FOLDER_POLL_SECONDS, DEFAULT_POLL_SECONDS),
  };
}
