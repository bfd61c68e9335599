/**
 * Message files as storage files (spec 2, Message: `rfc822` and `attachments` "can be used
 * with the storage API endpoints"): the raw message and each attachment, served by the storage
 * service's download and metadata paths for the mail account they belong to.
 */
import type { FileProvider } from '../services/storage';
import { standaloneFile } from '../services/storage';
import { isMessageFile } from './ids';
import type { MailService } from './service';

export function mailFiles(mail: MailService): FileProvider {
  const resource = (account: number, file: { id: string; name: string; mimeType: string; size: number | null }) =>
    standaloneFile({ id: file.id, account, name: file.name, size: file.size, mimeType: file.mimeType, parent: null, rawId: file.id });
  return {
    owns: isMessageFile,
    get: async (account, id) => resource(account, (await mail.messages.openFile(account, id)).file),
    open: async (account, id) => {
      const { file, stream } = await mail.messages.openFile(account, id);
      return { resource: resource(account, file), stream };
    },
  };
}
