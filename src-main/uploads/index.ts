/**
 * Wires the uploads area: the multipart service, the uploader, resuming the uploads
 * a previous process left unfinished, and aborting stale multipart sessions (setting
 * `uploads.staleSessionHours`, default 24) at start and then every hour.
 */
import type { Resource } from '../contract';
import { MultipartService, type MultipartDeps } from './multipart';
import { Uploader, type UploaderDeps, type UploaderOptions } from './uploader';

export { MultipartService, UploadLostError, type MultipartDeps, type MultipartSession } from './multipart';
export { Uploader, type UploadJob, type UploadRequest, type UploaderDeps, type UploaderOptions } from './uploader';

export type UploadsDeps = MultipartDeps & UploaderDeps;

export interface Uploads {
  multipart: MultipartService;
  uploader: Uploader;
  /** Settles, with each one's outcome, when the uploads found unfinished at start have ended. */
  resumed: Promise<PromiseSettledResult<Resource>[]>;
  /** Stops the stale-session timer (call before the database closes). */
  stop(): void;
}

const HOUR = 3600_000;

export function startUploads(deps: UploadsDeps, options: UploaderOptions = {}): Uploads {
  const multipart = new MultipartService(deps);
  const uploader = new Uploader(deps, multipart, options);
  let stopped = false;
  // Never after stop(): the app closes its database right after.
  const sweep = async () => {
    if (stopped) return 0;
    try {
      return await multipart.abortStale(deps.settings.get<number>('uploads.staleSessionHours', 24) * HOUR);
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
