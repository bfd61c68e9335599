/**
 * The connector registry. Each backend is one folder exporting a `ConnectorDefinition`; `all.ts`
 * registers them, one line each. Nothing else in Tributary names a concrete backend.
 */
import { z } from 'zod';
import { ServiceError } from '../errors';
import type { ConnectorDefinition, ConnectorKinds, ImportCredentials } from './types';

const definitions = new Map<string, ConnectorDefinition>();

export function defineConnector<K extends keyof ConnectorKinds, O>(definition: ConnectorDefinition<K, O>): ConnectorDefinition<K, O> {
  return definition;
}

export function register(...defs: ConnectorDefinition<any, any>[]): void {
  for (const def of defs) {
    if (definitions.has(def.id)) throw new Error(`Connector "${def.id}" registered twice`);
    definitions.set(def.id, def);
  }
}

export function connectorDefinition(id: string): ConnectorDefinition {
  const def = definitions.get(id);
  if (!def) throw new ServiceError('invalid_parameters', `Unknown service "${id}".`);
  return def;
}

export function allConnectors(): ConnectorDefinition[] {
  return [...definitions.values()];
}

/** Validates options against a connector's schema, with a readable invalid_parameters message. */
export function parseOptions(def: ConnectorDefinition, input: unknown): unknown {
  const result = def.options.safeParse(input);
  if (!result.success) {
    const first = result.error.issues[0];
    const where = first?.path.length ? `${first.path.join('.')}: ` : '';
    throw new ServiceError('invalid_parameters', `Invalid ${def.name} settings: ${where}${first?.message ?? 'invalid value'}.`);
  }
  return result.data;
}

/**
 * Whether the "connect account" form offers this service: the `reference` group (the in-memory
 * connector) exists for tests and the REST API, not for people.
 */
export const offeredToUsers = (def: ConnectorDefinition): boolean => def.group !== 'reference';

/**
 * Names of the option fields marked `internal` (`.meta({ internal: true })`): settings for
 * tests and scripts (a program's path) that the connect form leaves out; REST imports and
 * stored options still take them.
 */
export function internalFields(def: ConnectorDefinition): string[] {
  return fieldsWithMeta(def, 'internal');
}

function fieldsWithMeta(def: ConnectorDefinition, flag: 'secret' | 'internal'): string[] {
  const shape = (def.options as unknown as z.ZodObject).shape ?? {};
  return Object.entries(shape)
    .filter(([, field]) => (z.globalRegistry.get(field as z.ZodType) as Record<string, unknown> | undefined)?.[flag] === true)
    .map(([key]) => key);
}

/** The import credentials an account's options hold (`credentialsOf`, else its secret options in order). */
export function credentialsOf(def: ConnectorDefinition, options: Record<string, unknown>): ImportCredentials {
  if (def.credentialsOf) return def.credentialsOf(options);
  const [token, tokenSecret] = secretFields(def).map((k) => options[k]).filter((v): v is string => typeof v === 'string');
  return { token, token_secret: tokenSecret };
}

/** Names of the option fields marked `secret` (passwords, keys); never sent to the renderer. */
export function secretFields(def: ConnectorDefinition): string[] {
  return fieldsWithMeta(def, 'secret');
}

/**
 * The options whose change would move an account elsewhere (another server, port, folder,
 * bucket, ...): every non-secret field whose value differs, plus `endpoint` when a secret
 * changed the address the connector contacts. Empty when only credentials change.
 */
export function locationChanges(def: ConnectorDefinition, current: Record<string, unknown>, next: Record<string, unknown>): string[] {
  const secrets = new Set(secretFields(def));
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const keys = new Set([...Object.keys(current), ...Object.keys(next)]);
  const changed = [...keys].filter((k) => !secrets.has(k) && !same(current[k], next[k]));
  if (def.endpoint && !changed.length) {
    let moved: boolean;
    try {
      moved = def.endpoint(current) !== def.endpoint(next);
    } catch {
      moved = true; // an address that cannot be worked out is not proven unchanged
    }
    if (moved) changed.push('endpoint');
  }
  return changed;
}
