/**
 * JSON bodies with members serialised ahead of time: a listing page's objects are made into JSON
 * once per unchanged listing and copied into every answer that carries them.
 */
import { randomBytes } from 'node:crypto';

/** Stands for a JsonText in JSON.stringify's output; random, so no string a client sent can be it. */
const JSON_TEXT_VALUE = `\u0000${randomBytes(12).toString('hex')}`;
const JSON_TEXT_MARK = JSON.stringify(JSON_TEXT_VALUE);
let spliced: Buffer[] = [];

/**
 * A value already serialised (the objects of a listing page, made once per unchanged listing):
 * placed in a body like any value, its bytes are copied into the answer as they are.
 */
export class JsonText {
  constructor(readonly bytes: Buffer) {}

  toJSON(): string {
    spliced.push(this.bytes);
    return JSON_TEXT_VALUE;
  }
}

/** The JSON bytes of `body`, JsonText values copied in. */
export function jsonBytes(body: unknown): Buffer {
  spliced = [];
  const text = JSON.stringify(body);
  if (!spliced.length) return Buffer.from(text);
  const parts = text.split(JSON_TEXT_MARK);
  if (parts.length !== spliced.length + 1) throw new Error('A JsonText mark appeared in the body itself.');
  return Buffer.concat(parts.flatMap((p, i) => (i < spliced.length ? [Buffer.from(p), spliced[i]!] : [Buffer.from(p)])));
}
