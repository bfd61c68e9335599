/**
 * Downloading a selection (several files, or folders): in the browser one zip stream
 * (`/app/zip/<ticket>`); in the desktop app into a folder the user picks, as download jobs that
 * show in Transfers.
 */
import type { Resource } from '../../../../src-main/contract';
import type { Api } from '../../api/client';
import { nameText } from '../../components/Name';
import { toastError, useUi } from '../../stores/ui';

export async function downloadMany(api: Api, items: Resource[]): Promise<void> {
  if (items.length === 0) return;
  const account = items[0].account;
  const ids = items.map((i) => i.id);
  try {
    if (api.mode === 'ws') return await api.downloadZip(account, ids);
    const r = await api.call('files.downloadInto', { account, ids });
    if (r.path) {
      useUi.getState().setTransfersOpen(true);
      useUi.getState().toast({ kind: 'info', title: 'Downloading', message: `${r.started} file${r.started === 1 ? '' : 's'} into ${nameText(r.path)}` });
    }
  } catch (e) {
    toastError('Could not download the selection', e);
  }
}
