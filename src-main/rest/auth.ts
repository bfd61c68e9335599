/**
 * Authentication and account scoping (spec 1, Authentication). Schemes are matched
 * case-insensitively: `APIKey <key>` (every account), `Bearer <token>[,<token>…]` (the tokens'
 * accounts), `AccountKey <key>[,<key>…]` (v0 only, deprecated). `me` in a path stands for the
 * bearer/account-key accounts.
 */
import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../errors';
import { DECIMAL_ID, serviceHeader, type Auth, type Ctx, type RestDeps, type Version } from './http';

const MAX_TOKENS = 50;

export function authenticate(req: FastifyRequest, deps: RestDeps, version: Version): Auth {
  const header = req.headers.authorization;
  if (!header || !header.trim()) {
    throw new ServiceError('unauthorized', 'Authentication is required: send `Authorization: APIKey <key>` or `Authorization: Bearer <token>`.');
  }
  // Split at the first space by hand: a pattern with two runs of spaces around a lazy group took
  // quadratic time on a long header of spaces, before any credential was looked at.
  const trimmed = header.trim();
  const space = trimmed.search(/\s/);
  if (space < 0) throw new ServiceError('invalid_token', 'The Authorization header must be `<scheme> <credentials>`.');
  const schemeName = trimmed.slice(0, space);
  const scheme = schemeName.toLowerCase();
  const value = trimmed.slice(space).trim();
  if (scheme === 'apikey') {
    const keyId = deps.apiKeys.verifiedId(value);
    if (keyId === undefined) throw new ServiceError('invalid_token', 'The API key is not valid or has been revoked.');
    return { kind: 'api_key', keyId };
  }
  if (scheme === 'bearer' || scheme === 'accountkey') {
    if (scheme === 'accountkey' && version !== 'v0') {
      throw new ServiceError('invalid_token', 'Account keys are only accepted by v0; use a bearer token (POST /v0/accounts/{id}/token_from_key).');
    }
    const kind = scheme === 'bearer' ? 'bearer' : 'account_key';
    // An empty entry ("tok," or "tok,,tok2") is a changed credential, not a shorter list.
    const secrets = value.split(',').map((s) => s.trim());
    if (secrets.length > MAX_TOKENS || secrets.some((s) => !s)) throw new ServiceError('invalid_token', `Send 1 to ${MAX_TOKENS} comma-separated tokens.`);
    const accounts: number[] = [];
    for (const secret of secrets) {
      const account = deps.apiKeys.verifyAccountToken(secret, kind);
      if (account === undefined) throw new ServiceError('invalid_token', kind === 'bearer' ? 'A bearer token is not valid.' : 'An account key is not valid or has expired.');
      if (!accounts.includes(account)) accounts.push(account);
    }
    return { kind, accounts };
  }
  throw new ServiceError('invalid_token', `Unknown authorization scheme "${schemeName.slice(0, 40)}"; use APIKey or Bearer.`);
}

/**
 * The account ids a path segment names (`12`, `12,13`, `me`), each checked to exist and to be
 * reachable with the request's credentials.
 */
export function accountsOf(ctx: Ctx, segment: string, multi: boolean): number[] {
  const parts = segment.split(',').map((s) => s.trim());
  if (parts.length > MAX_TOKENS) throw new ServiceError('invalid_parameters', `At most ${MAX_TOKENS} accounts per request.`);
  if (!multi && parts.length !== 1) throw new ServiceError('invalid_parameters', 'This endpoint takes one account id.');
  const ids: number[] = [];
  for (const p of parts) {
    if (p === 'me') {
      if (ctx.auth.kind === 'api_key') throw new ServiceError('invalid_parameters', '`me` stands for the account of a bearer token; with an API key, give the account id.');
      if (!multi && ctx.auth.accounts.length !== 1) throw new ServiceError('invalid_parameters', '`me` is ambiguous with several tokens; give the account id.');
      ids.push(...ctx.auth.accounts);
      continue;
    }
    if (!DECIMAL_ID.test(p)) throw new ServiceError('invalid_parameters', 'An account id is a whole number (no leading zeros) or `me`.');
    ids.push(Number(p));
  }
  const unique = [...new Set(ids)];
  for (const id of unique) requireAccount(ctx, id);
  return unique;
}

export function accountOf(ctx: Ctx, segment: string): number {
  return accountsOf(ctx, segment, false)[0]!;
}

/** Throws unless the credentials reach account `id` and it exists. */
export function requireAccount(ctx: Ctx, id: number): void {
  if (ctx.auth.kind !== 'api_key' && !ctx.auth.accounts.includes(id)) {
    throw new ServiceError('forbidden', `These credentials do not give access to account ${id}.`);
  }
  ctx.app.accounts.row(id);
  // Impersonation: no connected backend has admin accounts, so the header names the account's own user.
  const asUser = serviceHeader(ctx.req, 'as-user');
  if (asUser !== undefined && asUser.length > 1000) throw new ServiceError('invalid_parameters', 'X-Service-As-User is too long.');
}

export function requireApiKey(ctx: Ctx, what: string): void {
  if (ctx.auth.kind !== 'api_key') throw new ServiceError('forbidden', `${what} needs an API key (Authorization: APIKey …).`);
}
