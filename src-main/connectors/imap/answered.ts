/**
 * The answer of an imapflow command that may have been skipped. imapflow answers nothing (no
 * error) to a command issued after the server's BYE came in, for example in the same packet as
 * the previous command's OK. Such a command never reached the server: it is a lost connection,
 * which `withClient` runs once more on a fresh one, not a success. Kept apart from the connector
 * so that mail code can use it without loading imapflow.
 */
export function answered<T>(answer: T | undefined | false, what: string): T {
  if (answer === undefined || answer === false) throw Object.assign(new Error(`${what}: the server closed the connection.`), { code: 'NoConnection' });
  return answer;
}
