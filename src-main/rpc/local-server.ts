/**
 * The contract procedures of the local server's own access rules (UI token, download tickets).
 */
import type { App } from '../app';
import type { Handlers } from '../contract';
import { localAccess } from '../server/access';
import type { Platform } from './platform';

export function localServerHandlers(app: App, platform: Pick<Platform, 'apiUrl'>): Pick<Handlers, 'files.downloadTicket' | 'files.zipTicket' | 'uiToken.rotate'> {
  const access = localAccess(app);
  return {
    'files.downloadTicket': async ({ account, id }) => ({ url: access.issueTicket(account, id) }),
    'files.zipTicket': async ({ account, ids }) => ({ url: access.issueZipTicket(account, ids) }),
    'uiToken.rotate': async () => {
      const token = access.rotate();
      return { token, url: platform.apiUrl ? `${platform.apiUrl}/?token=${token}` : null };
    },
  };
}
