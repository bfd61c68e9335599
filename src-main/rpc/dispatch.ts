/**
 * The one entry of both edges (Electron IPC in ipc/rpc.ts, the WebSocket in server/http.ts):
 * a procedure name and its input in, an RpcResult out.
 */
import { procedures, type Handlers } from '../contract';
import { ServiceError, toServiceError } from '../errors';

/** Parses input with the contract, runs the handler, and shapes the result for any transport. */
export async function dispatch(handlers: Handlers, procedure: string, input: unknown) {
  try {
    // Own keys only: "constructor" or "__proto__" are not procedures.
    const def = Object.hasOwn(procedures, procedure) ? (procedures as Record<string, { input: { parse(v: unknown): unknown } }>)[procedure] : undefined;
    if (!def) throw new ServiceError('not_found', `Unknown procedure "${procedure}".`);
    let parsed: unknown;
    try {
      parsed = def.input.parse(input ?? {});
    } catch (e) {
      const issue = (e as { issues?: { path: PropertyKey[]; message: string }[] }).issues?.[0];
      throw new ServiceError('invalid_parameters', issue ? `${issue.path.join('.') || 'input'}: ${issue.message}` : 'Invalid input.');
    }
    const value = await (handlers as Record<string, (i: unknown) => Promise<unknown>>)[procedure](parsed);
    return { ok: true as const, value };
  } catch (e) {
    const err = toServiceError(e);
    if (err.code === 'internal_error') console.error(`[rpc] ${procedure} failed:`, e);
    return { ok: false as const, error: { code: err.code, message: err.message, status: err.status } };
  }
}
