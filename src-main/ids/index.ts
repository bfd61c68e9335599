/**
 * Resource ids (spec 1, File `id`): the AEAD-encrypted pair (account, upstream id), base64url,
 * at most 8192 characters. Encryption is deterministic (a synthetic nonce = HMAC of the
 * plaintext, as in SIV), so the same file always has the same id across listings and restarts,
 * while a tampered, truncated or foreign id fails authentication and reads as not_found.
 * `root`, `trash` and `ephemeral` are reserved ids and never encrypted.
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { ServiceError } from '../errors';

export const MAX_ID_LENGTH = 8192;
export const SPECIAL_IDS = ['root', 'trash', 'ephemeral'] as const;
export type SpecialId = (typeof SPECIAL_IDS)[number];

const VERSION = 1;

export class IdCodec {
  private readonly encKey: Buffer;
  private readonly macKey: Buffer;

  /**
   * Ids made or read recently, both ways (encryption is deterministic, so an id never changes):
   * a listing encodes one id per entry, and the cipher setup costs more than the rest of it.
   */
  private readonly encoded = new Map<string, string>();
  private readonly decoded = new Map<string, string>();

  constructor(key: Buffer) {
    this.encKey = createHmac('sha256', key).update('enc').digest();
    this.macKey = createHmac('sha256', key).update('nonce').digest();
  }

  encode(accountId: number, upstreamId: string): string {
    const key = `${accountId}:${upstreamId}`;
    let id = this.encoded.get(key);
    if (id === undefined) {
      id = this.seal(accountId, upstreamId);
      remember(this.encoded, key, id);
      remember(this.decoded, id, key);
    }
    return id;
  }

  private seal(accountId: number, upstreamId: string): string {
    const plain = Buffer.concat([Buffer.from([VERSION]), u32(accountId), Buffer.from(upstreamId, 'utf8')]);
    const nonce = createHmac('sha256', this.macKey).update(plain).digest().subarray(0, 12);
    const cipher = createCipheriv('aes-256-gcm', this.encKey, nonce);
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    const id = sealed.toString('base64url');
    if (id.length > MAX_ID_LENGTH) {
      throw new ServiceError('invalid_parameters', 'The path is too long to be given an id (ids are at most 8192 characters).');
    }
    return id;
  }

  /** The upstream id inside `id` if it is authentic and belongs to `accountId`; else not_found. */
  decode(accountId: number, id: string): string {
    const fail = () => new ServiceError('not_found', 'No file or folder has this id in this account.');
    const known = this.decoded.get(id);
    if (known !== undefined) {
      const colon = known.indexOf(':');
      if (known.slice(0, colon) !== String(accountId)) throw fail();
      return known.slice(colon + 1);
    }
    if (!isWellFormedId(id)) throw fail();
    const sealed = Buffer.from(id, 'base64url');
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encKey, sealed.subarray(0, 12));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      plain = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
    } catch {
      throw fail();
    }
    if (plain[0] !== VERSION || plain.readUInt32BE(1) !== accountId) throw fail();
    const upstreamId = plain.subarray(5).toString('utf8');
    remember(this.decoded, id, `${accountId}:${upstreamId}`);
    return upstreamId;
  }
}

/** Ids held per direction: enough for the pages of a few big folders, a few MB at most. */
const REMEMBERED = 20_000;

function remember(map: Map<string, string>, key: string, value: string): void {
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}

export const isSpecialId = (id: string): id is SpecialId => (SPECIAL_IDS as readonly string[]).includes(id);

/**
 * Whether `id` has the form of an id this codec makes (or a reserved one): whether it names
 * anything is for `decode` to say. base64url decoding ignores trailing bits and characters, so
 * only the canonical spelling of the sealed bytes is an id: no other string names the same file.
 */
export function isWellFormedId(id: unknown): id is string {
  if (typeof id !== 'string') return false;
  if (isSpecialId(id)) return true;
  if (id.length < 40 || id.length > MAX_ID_LENGTH || !/^[A-Za-z0-9_-]+$/.test(id)) return false;
  return Buffer.from(id, 'base64url').toString('base64url') === id;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}
