/**
 * Which failures mean "the server cannot be reached right now" (service_not_available, retry
 * later) rather than "the server refused": one list for every connector. A connector whose
 * library has codes of its own (nodemailer, imapflow, the Azure SDK) passes them as `extra`.
 */

/** Socket and resolver errno codes, and undici's socket and timeout codes (fetch, WebDAV). */
const UNREACHABLE = [
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
] as const;

const CODES: ReadonlySet<string> = new Set(UNREACHABLE);

/** True when an error `code` says the server cannot be reached. */
export function isUnreachable(code: unknown, extra: readonly string[] = []): boolean {
  return typeof code === 'string' && (CODES.has(code) || extra.includes(code));
}

/** The same codes found in a message, for libraries that keep them only there (ssh2). */
export const UNREACHABLE_IN_MESSAGE = new RegExp(UNREACHABLE.join('|'), 'i');
