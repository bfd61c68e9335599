/** Names of the application settings more than one part of Tributary reads. */

/** REST `retrieve_tokens=true` is honoured only when this is on (spec 1, Retrieve an account). */
export const SETTING_RETRIEVE_TOKENS = 'rest.retrieveTokens';
/** Public base URL of the mail tracking endpoints (spec 2 Send `tracking`). */
export const SETTING_TRACKING_BASE_URL = 'mail.trackingBaseUrl';
/** Seconds a transfer must have run for its end to be announced (desktop notification); null: never. */
export const SETTING_NOTIFY_AFTER_SECONDS = 'transfers.notifyAfterSeconds';
