/**
 * Limits both sides of the contract know (no zod here: the renderer imports this alone).
 *
 * WS_MAX_MESSAGE_BYTES: the largest WebSocket message the server reads (bytes of one JSON
 * call). Calls are small: file bodies, attachments and downloads go over HTTP. A bigger message
 * closes the socket with 1009, so the web client refuses to send one and says why instead.
 */
export const WS_MAX_MESSAGE_BYTES = 1 << 20;

/**
 * Document 1, Limits: multipart uploads are for files larger than 5 MB (5 MiB here, as S3's
 * smallest part): at or below it a file goes in one request, above it in parts of at least this.
 */
export const MULTIPART_MIN_SIZE = 5 * 1024 * 1024;

/**
 * The window of `mail.list` that holds every date a message can carry: a Date header is the
 * sender's text (a clock days ahead, 2099, 1969), and the mailbox shows such mail too.
 */
export const ALL_DATES = { after: '0001-01-01T00:00:00Z', before: '9999-12-31T23:59:59Z' } as const;
