/**
 * Reading a WebDAV 207 Multi-Status body. Elements are matched by namespace URI and local
 * name, never by prefix (Apache answers `lp1:getetag`, others `d:getetag`). Only properties
 * inside a propstat whose status is 2xx are kept.
 *
 * A 100,000-entry folder is a 50 MB answer, read while it arrives. Two tokenizers feed the same
 * handlers (`MultistatusReader`): a scanner made for this one document (multistatus-scan.ts),
 * which jumps from `<` to `<` with `indexOf`, and saxes, which takes every body whose prolog the
 * scanner does not read itself (a DOCTYPE, comments or processing instructions before the root)
 * and remains the reference the scanner is tested against. The handlers keep the work per
 * element small (text is kept only inside an element, values are converted only for a 2xx
 * propstat, one object per response), since this is most of a listing's CPU.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { SaxesParser } from 'saxes';
import { ServiceError } from '../../errors';
import { MultistatusScanner, type MultistatusHandlers } from './multistatus-scan';

const DAV = 'DAV:';
const XML_NS = 'http://www.w3.org/XML/1998/namespace';

export interface DavResponse {
  href: string;
  collection: boolean;
  length?: number;
  lastModified?: Date;
  created?: Date;
  etag?: string;
  contentType?: string;
  quotaUsed?: number;
  quotaAvailable?: number;
}

/** Three ASCII letters at `i` as one number (no string is made). */
const word = (s: string, i: number): number => (s.charCodeAt(i) << 16) | (s.charCodeAt(i + 1) << 8) | s.charCodeAt(i + 2);
const MONTHS = new Map(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].map((m, i) => [word(m, 0), i]));
const WEEKDAYS = new Set(['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].map((d) => word(d, 0)));
/** Two ASCII digits at `i` as a number, or NaN. */
const two = (s: string, i: number): number => {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : NaN;
};
/**
 * RFC 1123 (`Sat, 21 Nov 2026 06:21:51 GMT`, what servers send as getlastmodified) read from
 * its fixed positions, in the ranges where `new Date()` reads it the same way; undefined for
 * anything else, which `date` leaves to `new Date()`.
 */
export function rfc1123(s: string): Date | undefined {
  if (s.length !== 29 || s.charCodeAt(3) !== 44 || s.charCodeAt(4) !== 32 || s.charCodeAt(7) !== 32 || s.charCodeAt(11) !== 32) return undefined;
  if (s.charCodeAt(16) !== 32 || s.charCodeAt(19) !== 58 || s.charCodeAt(22) !== 58 || word(s, 25) !== 0x20474d || s.charCodeAt(28) !== 84) return undefined;
  const month = MONTHS.get(word(s, 8));
  if (month === undefined || !WEEKDAYS.has(word(s, 0))) return undefined;
  const day = two(s, 5);
  const year = two(s, 12) * 100 + two(s, 14);
  const h = two(s, 17);
  const m = two(s, 20);
  const sec = two(s, 23);
  // `new Date()` reads years below 1000 and a 60th second its own ways: those go to it.
  if (!(day >= 1 && day <= 31 && year >= 1000 && h <= 23 && m <= 59 && sec <= 59)) return undefined;
  return new Date(Date.UTC(year, month, day, h, m, sec));
}
/**
 * RFC 3339 as servers send creationdate (`2026-11-24T18:48:55Z`: seconds, UTC), read the same
 * way; undefined for any other form (fractions, offsets), which `date` leaves to `new Date()`.
 */
export function rfc3339(s: string): Date | undefined {
  if (s.length !== 20 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58 || s.charCodeAt(19) !== 90) return undefined;
  const year = two(s, 0) * 100 + two(s, 2);
  const month = two(s, 5);
  const day = two(s, 8);
  const h = two(s, 11);
  const m = two(s, 14);
  const sec = two(s, 17);
  // Days past 28 and years before 1000 are left to `new Date()`, which has its own ways with them.
  if (!(year >= 1000 && month >= 1 && month <= 12 && day >= 1 && day <= 28 && h <= 23 && m <= 59 && sec <= 59)) return undefined;
  return new Date(Date.UTC(year, month - 1, day, h, m, sec));
}
const date = (s: string): Date | undefined => {
  const t = s.trim();
  const fast = t.length === 20 ? rfc3339(t) : rfc1123(t);
  if (fast) return fast;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? undefined : d;
};
const int = (s: string): number | undefined => {
  // Plain digits (what servers send) are summed here; anything else goes through Number().
  const n = s.length;
  if (n > 0 && n < 16) {
    let v = 0;
    for (let i = 0; i < n; i++) {
      const d = s.charCodeAt(i) - 48;
      if (d < 0 || d > 9) return intOf(s);
      v = v * 10 + d;
    }
    return v;
  }
  return intOf(s);
};
const intOf = (s: string): number | undefined => {
  const n = Number(s.trim());
  return s.trim() !== '' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};
const GOOD_STATUS = /(?:^|\s)2\d\d/;

/**
 * The handlers of a Multi-Status body, fed by a tokenizer: `attribute` for each attribute of an
 * element before its `open`, `text` for its character data (entities decoded, CDATA included),
 * `close` at its end. Responses go to `each` as they complete, or else land in `out`.
 */
export class MultistatusReader implements MultistatusHandlers {
  readonly out: DavResponse[] = [];
  constructor(private readonly each?: (response: DavResponse) => void) {}
  /** Whether text given now is used (only a leaf's text is: the innermost element's since it opened). */
  inText = false;
  // Namespaces are resolved here rather than by saxes (its namespace mode was a sixth of the
  // parse): only element names are looked up, in the declarations open around them.
  private scope: { depth: number; prefix: string; uri: string }[] = [{ depth: 0, prefix: 'xml', uri: XML_NS }];
  private stack: string[] = [];
  private textSoFar = '';
  private inResponse = false;
  private inPropstat = false;
  private inProp = false;
  // The response being read (values of its 2xx propstats), then the current propstat's raw values.
  private href: string | undefined;
  private collection = false;
  private length: number | undefined;
  private lastModified: Date | undefined;
  private created: Date | undefined;
  private etag: string | undefined;
  private contentType: string | undefined;
  private quotaUsed: number | undefined;
  private quotaAvailable: number | undefined;
  private status = '';
  private pCollection = false;
  private pLength: string | undefined;
  private pModified: string | undefined;
  private pCreated: string | undefined;
  private pEtag: string | undefined;
  private pType: string | undefined;
  private pUsed: string | undefined;
  private pAvailable: string | undefined;

  /** An attribute of the element about to open (its depth is that element's). */
  attribute(name: string, value: string): void {
    if (name === 'xmlns') this.scope.push({ depth: this.stack.length + 1, prefix: '', uri: value });
    else if (name.startsWith('xmlns:')) this.scope.push({ depth: this.stack.length + 1, prefix: name.slice(6), uri: value });
  }

  open(name: string): void {
    const colon = name.indexOf(':');
    this.openSplit(colon < 0 ? '' : name.slice(0, colon), colon < 0 ? name : name.slice(colon + 1));
  }

  /** `open` for a name already split at its first colon. */
  openSplit(prefix: string, local: string): void {
    const scope = this.scope;
    const stack = this.stack;
    let uri = '';
    for (let i = scope.length - 1; i >= 0; i--) {
      if (scope[i]!.prefix === prefix) {
        uri = scope[i]!.uri;
        break;
      }
    }
    // An undeclared prefix matches nothing (saxes' namespace mode would reject the answer).
    const key = uri === DAV ? local : `{${uri}}${local}`;
    stack.push(key);
    this.textSoFar = '';
    this.inText = true;
    if (key === 'response') {
      this.inResponse = true;
      this.href = this.lastModified = this.created = this.etag = this.contentType = undefined;
      this.length = this.quotaUsed = this.quotaAvailable = undefined;
      this.collection = false;
    } else if (this.inResponse && key === 'propstat') {
      this.inPropstat = true;
      this.status = '';
      this.pCollection = false;
      this.pLength = this.pModified = this.pCreated = this.pEtag = this.pType = this.pUsed = this.pAvailable = undefined;
    } else if (this.inPropstat && key === 'prop') {
      this.inProp = true;
    } else if (this.inProp && key === 'collection' && stack[stack.length - 2] === 'resourcetype') {
      this.pCollection = true;
    }
  }

  text(t: string): void {
    if (this.inText) this.textSoFar += t;
  }

  close(): void {
    const scope = this.scope;
    const stack = this.stack;
    while (scope[scope.length - 1]!.depth === stack.length) scope.pop();
    const key = stack.pop();
    this.inText = false;
    if (!this.inResponse) return;
    const text = this.textSoFar;
    const parent = stack[stack.length - 1];
    if (this.inProp && parent === 'prop') {
      switch (key) {
        case 'getcontentlength':
          this.pLength = text;
          break;
        case 'getlastmodified':
          this.pModified = text;
          break;
        case 'creationdate':
          this.pCreated = text;
          break;
        case 'getetag':
          this.pEtag = text;
          break;
        case 'getcontenttype':
          this.pType = text;
          break;
        case 'quota-used-bytes':
          this.pUsed = text;
          break;
        case 'quota-available-bytes':
          this.pAvailable = text;
          break;
      }
    } else if (key === 'href' && parent === 'response') this.href = text.trim();
    else if (key === 'status' && parent === 'propstat') this.status = text;
    else if (key === 'prop') this.inProp = false;
    else if (key === 'propstat') {
      this.inPropstat = this.inProp = false;
      if (GOOD_STATUS.test(this.status)) {
        // A value the server sent but that does not read keeps what an earlier propstat gave.
        if (this.pCollection) this.collection = true;
        if (this.pLength !== undefined) this.length = int(this.pLength) ?? this.length;
        if (this.pModified !== undefined) this.lastModified = date(this.pModified) ?? this.lastModified;
        if (this.pCreated !== undefined) this.created = date(this.pCreated) ?? this.created;
        if (this.pEtag !== undefined) this.etag = this.pEtag.trim() || this.etag;
        if (this.pType !== undefined) this.contentType = this.pType.trim() || this.contentType;
        if (this.pUsed !== undefined) this.quotaUsed = int(this.pUsed) ?? this.quotaUsed;
        if (this.pAvailable !== undefined) this.quotaAvailable = int(this.pAvailable) ?? this.quotaAvailable;
      }
    } else if (key === 'response') {
      this.inResponse = this.inPropstat = this.inProp = false;
      const { href, collection, length, lastModified, created, etag, contentType, quotaUsed, quotaAvailable } = this;
      if (href === undefined) return;
      const response: DavResponse = { href, collection, length, lastModified, created, etag, contentType, quotaUsed, quotaAvailable };
      if (this.each) this.each(response);
      else this.out.push(response);
    }
  }
}

/** saxes in its plain (no namespace) mode, feeding `reader`. */
function saxesInto(reader: MultistatusReader): SaxesParser {
  const parser = new SaxesParser();
  parser.on('attribute', ({ name, value }) => reader.attribute(name, value));
  parser.on('opentag', (tag) => reader.open(tag.name));
  parser.on('text', (t) => reader.text(t));
  parser.on('cdata', (t) => reader.text(t));
  parser.on('closetag', () => reader.close());
  return parser;
}

type Body = Readable | AsyncIterable<Buffer | string> | Iterable<Buffer | string>;

/** Runs `feed` over the decoded body; a malformed body is an upstream_error, a network error goes to the caller. */
async function decodeInto(body: Body, feed: (text: string) => void, end: () => void): Promise<void> {
  // StringDecoder rather than TextDecoder: the same text (U+FFFD for each bad sequence, a
  // character cut between chunks held for the next) at a sixth of the CPU on ASCII. A leading
  // byte order mark, which TextDecoder dropped, is now dropped by saxes (the scanner hands such
  // a body to it).
  const decoder = new StringDecoder('utf8');
  try {
    for await (const chunk of body) {
      if (typeof chunk === 'string') feed(chunk);
      else feed(decoder.write(chunk));
    }
    feed(decoder.end());
    end();
  } catch (e) {
    // Network errors (they carry a `code`) go to the caller's mapping; anything else is bad XML.
    if (e instanceof ServiceError || (e && typeof e === 'object' && 'code' in e)) throw e;
    throw new ServiceError('upstream_error', `The WebDAV server sent an unreadable answer: ${(e as Error).message}`, {}, { cause: e });
  }
}

/** Which tokenizer listings use: the scanner, or saxes alone (for measuring one against the other). */
export const multistatusTokenizer: { scanner: boolean } = { scanner: true };

/**
 * The responses of a Multi-Status body. With `each`, each one is handed over as soon as it is
 * read (while the rest is still arriving) and the list returned is empty.
 */
export async function parseMultistatus(body: Body, each?: (response: DavResponse) => void): Promise<DavResponse[]> {
  if (!multistatusTokenizer.scanner) return parseMultistatusSaxes(body, each);
  const reader = new MultistatusReader(each);
  let scanner: MultistatusScanner | undefined = new MultistatusScanner(reader);
  let parser: SaxesParser | undefined;
  await decodeInto(
    body,
    (text) => {
      if (scanner) {
        if (scanner.write(text)) return;
        // A prolog the scanner does not read: saxes takes the whole body (nothing was handled yet).
        parser = saxesInto(reader);
        parser.write(scanner.held());
        scanner = undefined;
      } else parser!.write(text);
    },
    () => (scanner ? scanner.end() : parser!.close()),
  );
  return reader.out;
}

/** The same answer read by saxes alone: the reference the scanner is held to. */
export async function parseMultistatusSaxes(body: Body, each?: (response: DavResponse) => void): Promise<DavResponse[]> {
  const reader = new MultistatusReader(each);
  const parser = saxesInto(reader);
  await decodeInto(
    body,
    (text) => parser.write(text),
    () => parser.close(),
  );
  return reader.out;
}
