/** Names of the application settings more than one part of Tributary reads. */

/** REST `retrieve_tokens=true` is honoured only when this is on (spec 1, Retrieve an account). */
export const SETTING_RETRIEVE_TOKENS = 'rest.retrieveTokens';
/** Public base URL of the mail tracking endpoints (spec 2 Send `tracking`). */
export const SETTING_TRACKING_BASE_URL = 'mail.trackingBaseUrl';
/** Seconds a transfer must have run for its end to be announced (desktop notification); null: never. */
export const SETTING_NOTIFY_AFTER_SECONDS = 'transfers.notifyAfterSeconds';
/** Upload from a URL and webhooks may reach every private/loopback address (self-hosted servers). */
export const SETTING_OUTBOUND_ALLOW_PRIVATE = 'network.allowPrivate';
/** Host names, addresses and CIDR ranges they may reach although private (e.g. the user's NAS). */
export const SETTING_OUTBOUND_ALLOWED_HOSTS = 'network.allowedHosts';
/** Seconds between two listings of an open folder whose backend cannot push changes (services/folder-watch.ts). */
export const SETTING_FOLDER_POLL_SECONDS = 'files.pollSeconds';
/** Seconds between two walks of a sync pair's remote folder whose backend cannot push changes (sync/remote-watch.ts). */
export const SETTING_SYNC_POLL_SECONDS = 'sync.remotePollSeconds';
/** Seconds a message waits in the outbox before it is sent, so it can be taken back (0-30). */
export const SETTING_UNDO_SEND_SECONDS = 'mail.undoSendSeconds';
export const DEFAULT_UNDO_SEND_SECONDS = 5;
