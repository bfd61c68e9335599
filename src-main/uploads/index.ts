/**
 * Wires the uploads area into an App: the multipart service, the uploader, resuming the uploads
 * a previous process left unfinished, and aborting stale multipart sessions (setting
 * `uploads.staleSessionHours`, default 24) at start and then every hour.
 */
import type { App } from '../app';
import type { Resource } from '../contract';
import { MultipartService } from './multipart';
import { Uploader, type UploaderOptions } from './uploader';

export { MultipartService, UploadLostError, type MultipartSession } from './multipart';
export { Uploader, type UploadJob, type UploadRequest, type UploaderOptions } from './uploader';

export interface Uploads {
  multipart: MultipartService;
  uploader: Uploader;
  /** Settles, with each one's outcome, when the uploads found unfinished at start have ended. */
  resumed: Promise<PromiseSettledResult<Resource>[]>;
  /** Stops the stale-session timer (call before app.close()). */
  stop(): void;
}

const HOUR = 3600_000;

export function startUploads(app: App, options: UploaderOptions = {}): Uploads {
  const multipart = new MultipartService(app);
  const uploader = new Uploader(app, multipart, options);
  let stopped = false;
  // Never after stop(): the app closes its database right after.
  const sweep = async () => {
    if (stopped) return 0;
    try {
      return await multipart.abortStale(app.settings.get<number>('uploads.staleSessionHours', 24) * HOUR);
    } catch {
      return 0;
    }
  };
  // Resume first: a session an unfinished upload still needs must not be swept as stale.
  const resumed = uploader.resumeAll().then(async (results) => {
    await sweep();
    return results;
  });
  const timer = setInterval(sweep, HOUR);
  timer.unref();
  return {
    multipart,
    uploader,
    resumed,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
