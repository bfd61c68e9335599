/**
 * REST plumbing shared by every version: the route table and its matcher, request parameter
 * parsing with the spec's tolerance (booleans true/True/1, trailing slashes, unknown keys
 * ignored), JSON bodies read from the raw stream, and the error body of every failure.
 *
 * We route ourselves below one fastify wildcard per version because resource ids reach 8192
 * characters (fastify's router caps path parameters at 100 by default) and because spec clients
 * send trailing slashes on some paths and not on others.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../app';
import { ServiceError, type ErrorCode } from '../errors';
import type { ApiKeysService } from '../services/api-keys';
import type { LinksService } from '../services/links';
import type { MultipartService } from '../uploads/multipart';
import { jsonBytes } from './json-text';
import type { Version } from './shapes/version';

export { jsonBytes, JsonText } from './json-text';

export type { Version };
export const VERSIONS: Version[] = ['v0', 'v1', 'v2'];

export type Auth =
  | { kind: 'api_key'; keyId: number }
  | { kind: 'bearer' | 'account_key'; accounts: number[] };

export interface RestDeps {
  app: App;
  apiKeys: ApiKeysService;
  links: LinksService;
  multipart: MultipartService;
}

export interface Ctx extends RestDeps {
  version: Version;
  req: FastifyRequest;
  reply: FastifyReply;
  params: Record<string, string>;
  query: Record<string, string>;
  /** Undefined only on routes declared `auth: 'none'`. */
  auth: Auth;
}

export interface Result {
  status: number;
  body?: unknown;
}

export type Handler = (ctx: Ctx) => Promise<Result | void>;

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path after the version segment; `{s}` is '' in v0 and 'storage/' in v1/v2; `:name` params. */
  path: string;
  versions: Version[];
  summary: string;
  /** `none` for public routes; everything else requires one of the spec's schemes. */
  auth?: 'none';
  /** Work that may wait a few event-loop turns under load so other requests stay quick (turns.ts). */
  costly?: true;
  handler: Handler;
}

interface Compiled {
  route: Route;
  segments: string[];
}

export class Router {
  private readonly byVersion = new Map<Version, Compiled[]>();

  constructor(readonly routes: Route[]) {
    for (const v of VERSIONS) {
      const list: Compiled[] = [];
      for (const route of routes) {
        if (!route.versions.includes(v)) continue;
        list.push({ route, segments: split(expandPath(route.path, v)) });
      }
      this.byVersion.set(v, list);
    }
  }

  /** The route for a method and path (below the version), or the reason there is none. */
  match(version: Version, method: string, path: string): { route: Route; params: Record<string, string> } | { error: ErrorCode } {
    const segs = split(path);
    let pathMatched = false;
    for (const c of this.byVersion.get(version)!) {
      const params = matchSegments(c.segments, segs);
      if (!params) continue;
      pathMatched = true;
      if (c.route.method === method || (method === 'HEAD' && c.route.method === 'GET')) return { route: c.route, params };
    }
    return { error: pathMatched ? 'method_not_allowed' : 'not_found' };
  }
}

export function expandPath(path: string, v: Version): string {
  return path.replace('{s}', v === 'v0' ? '' : 'storage/');
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function matchSegments(pattern: string[], segs: string[]): Record<string, string> | undefined {
  if (pattern.length !== segs.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.startsWith(':')) {
      let value: string;
      try {
        value = decodeURIComponent(segs[i]!);
      } catch {
        return undefined;
      }
      params[p.slice(1)] = value;
    } else if (p !== segs[i]) return undefined;
  }
  return params;
}

// ---- headers ---------------------------------------------------------------------------------

/** `X-Service-<name>`, or its alias `X-Kloudless-<name>` that existing client libraries send. */
export function serviceHeader(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[`x-service-${name}`] ?? req.headers[`x-kloudless-${name}`];
  return Array.isArray(v) ? v[0] : v;
}

// ---- query parameters --------------------------------------------------------------------------

export function flatQuery(q: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (q && typeof q === 'object') {
    for (const [k, v] of Object.entries(q as Record<string, unknown>)) {
      const first = Array.isArray(v) ? v[0] : v;
      if (typeof first === 'string') out[k] = first;
    }
  }
  return out;
}

const TRUE = new Set(['true', 'True', 'TRUE', '1']);
const FALSE = new Set(['false', 'False', 'FALSE', '0']);

/** A boolean parameter from the query or a JSON body: true/True/1, false/False/0. */
export function bool(value: unknown, name: string, fallback: boolean): boolean;
export function bool(value: unknown, name: string, fallback?: undefined): boolean | undefined;
export function bool(value: unknown, name: string, fallback?: boolean): boolean | undefined {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value === 'string') {
    if (TRUE.has(value)) return true;
    if (FALSE.has(value)) return false;
  }
  throw new ServiceError('invalid_parameters', `\`${name}\` must be true or false.`);
}

/** A whole-number parameter within [min, max]. */
/**
 * A numeric id in a path, in its one canonical spelling (no sign, no leading zeros), so that no
 * other string names the same session, key, webhook or subscription.
 */
export const DECIMAL_ID = /^(0|[1-9]\d{0,14})$/;

export function int(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d{1,16}\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ServiceError('invalid_parameters', `\`${name}\` must be a whole number from ${min} to ${max}.`);
  }
  return n;
}

export function str(body: Record<string, unknown>, name: string, required: true, max?: number): string;
export function str(body: Record<string, unknown>, name: string, required?: false, max?: number): string | undefined;
export function str(body: Record<string, unknown>, name: string, required = false, max = 8192): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) {
    if (required) throw new ServiceError('invalid_parameters', `\`${name}\` is required.`);
    return undefined;
  }
  if (typeof v !== 'string' || v.length > max || (required && v.length === 0)) {
    throw new ServiceError('invalid_parameters', `\`${name}\` must be a string of at most ${max} characters.`);
  }
  return v;
}

/**
 * An ISO 8601 date-time (`2024-01-31T12:00:00Z`, `2024-01-31T12:00:00.123+01:00`) or date
 * (`2024-01-31`, midnight UTC), in years 0000–9999, as the one spelling Tributary stores and
 * compares: `toISOString()` (24 characters, so stored times also sort as strings). Nothing else
 * is a time: not a bare number, not "March 7", not an expanded year (`+275760-…`), not a day
 * the calendar does not have. A date-time without an offset is this machine's local time, as
 * ECMAScript reads it.
 */
export function timestamp(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const ms = typeof value === 'string' ? isoTime(value) : undefined;
  if (ms === undefined) {
    throw new ServiceError('invalid_parameters', `\`${name}\` must be an ISO 8601 date-time such as 2024-01-31T12:00:00Z, in the years 0000 to 9999.`);
  }
  return new Date(ms).toISOString();
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/** Milliseconds of an ISO 8601 date or date-time within 0000-01-01 and 9999-12-31 (UTC), or undefined. */
function isoTime(text: string): number | undefined {
  const m = ISO_TIME.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined;
  const at = new Date(0);
  if (m[4] !== undefined && m[8] === undefined && m[9] === undefined) {
    at.setFullYear(year, month - 1, day); // a date-time without offset: local time
    at.setHours(hour, minute, second, millis);
  } else {
    at.setUTCFullYear(year, month - 1, day);
    at.setUTCHours(hour, minute, second, millis);
    if (m[9] !== undefined) {
      const [oh, om] = [Number(m[10]), Number(m[11] ?? 0)];
      if (oh > 23 || om > 59) return undefined;
      at.setTime(at.getTime() - (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000);
    }
  }
  const ms = at.getTime();
  return ms >= YEAR_0 && ms <= END_9999 ? ms : undefined;
}

function daysIn(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

const YEAR_0 = new Date(0).setUTCFullYear(0, 0, 1);
const END_9999 = new Date(0).setUTCFullYear(9999, 11, 31) + 86_400_000 - 1;

// ---- bodies ------------------------------------------------------------------------------------

export const MAX_JSON_BYTES = 1 << 20;

/** The request body as a stream (empty when the request had none). */
export function bodyStream(req: FastifyRequest): Readable {
  const b = req.body as unknown;
  if (b instanceof Readable) return b;
  if (Buffer.isBuffer(b) || typeof b === 'string') return Readable.from([Buffer.from(b)]);
  return Readable.from([]);
}

/**
 * The JSON object body, whatever the Content-Type (clients differ); an empty body is `{}`.
 * Unknown keys are left for the handler to ignore.
 */
export async function jsonBody(req: FastifyRequest): Promise<Record<string, unknown>> {
  const parsed = await jsonValue(req);
  if (parsed === undefined) return {};
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ServiceError('bad_request', 'The request body must be a JSON object.');
  return parsed as Record<string, unknown>;
}

/** Any JSON value as the body (a list, for permission updates); undefined when the body is empty. */
export async function jsonValue(req: FastifyRequest): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of bodyStream(req)) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES) throw new ServiceError('payload_too_large', `A JSON body is at most ${MAX_JSON_BYTES} bytes.`);
    chunks.push(Buffer.from(chunk as Buffer));
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ServiceError('bad_request', 'The request body is not valid JSON.');
  }
}

// ---- responses ---------------------------------------------------------------------------------

/** JSON with exactly `Content-Type: application/json` (some clients compare the whole header). */
export function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  if (status === 204) return reply.code(204).removeHeader('content-type').send();
  // A Buffer, because fastify appends `; charset=utf-8` to JSON strings.
  return reply.code(status).header('content-type', 'application/json').send(jsonBytes(body));
}

