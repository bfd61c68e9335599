/**
 * Streaming parser of a WebDAV 207 Multi-Status body. Elements are matched by namespace URI
 * and local name, never by prefix (Apache answers `lp1:getetag`, others `d:getetag`). Only
 * properties inside a propstat whose status is 2xx are kept.
 *
 * A 100,000-entry folder is a 50 MB answer, parsed while it arrives: the handlers below keep
 * the work per element small (text is kept only inside an element, values are converted only
 * for a 2xx propstat, one object per response), since this parse is most of a listing's CPU.
 */
import type { Readable } from 'node:stream';
import { SaxesParser } from 'saxes';
import { ServiceError } from '../../errors';

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

const date = (s: string): Date | undefined => {
  const d = new Date(s.trim());
  return Number.isNaN(d.getTime()) ? undefined : d;
};
const int = (s: string): number | undefined => {
  const n = Number(s.trim());
  return s.trim() !== '' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};
const GOOD_STATUS = /\s2\d\d/;

export async function parseMultistatus(body: Readable | AsyncIterable<Buffer | string>): Promise<DavResponse[]> {
  // Namespaces are resolved here rather than by saxes (its namespace mode was a sixth of the
  // parse): only element names are looked up, in the declarations open around them.
  const parser = new SaxesParser();
  const scope: { depth: number; prefix: string; uri: string }[] = [{ depth: 0, prefix: 'xml', uri: XML_NS }];
  const out: DavResponse[] = [];
  const stack: string[] = [];
  /** Text of the innermost open element, since it opened (only leaves' text is used). */
  let text = '';
  let inText = false;
  let inResponse = false;
  let inPropstat = false;
  let inProp = false;
  // The response being read (values of its 2xx propstats), then the current propstat's raw values.
  let href: string | undefined;
  let collection = false;
  let length: number | undefined;
  let lastModified: Date | undefined;
  let created: Date | undefined;
  let etag: string | undefined;
  let contentType: string | undefined;
  let quotaUsed: number | undefined;
  let quotaAvailable: number | undefined;
  let status = '';
  let pCollection = false;
  let pLength: string | undefined;
  let pModified: string | undefined;
  let pCreated: string | undefined;
  let pEtag: string | undefined;
  let pType: string | undefined;
  let pUsed: string | undefined;
  let pAvailable: string | undefined;

  // An element's attributes come before its opentag: their depth is the element's.
  parser.on('attribute', ({ name, value }) => {
    if (name === 'xmlns') scope.push({ depth: stack.length + 1, prefix: '', uri: value });
    else if (name.startsWith('xmlns:')) scope.push({ depth: stack.length + 1, prefix: name.slice(6), uri: value });
  });
  parser.on('opentag', (tag) => {
    const name = tag.name;
    const colon = name.indexOf(':');
    const prefix = colon < 0 ? '' : name.slice(0, colon);
    const local = colon < 0 ? name : name.slice(colon + 1);
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
    text = '';
    inText = true;
    if (key === 'response') {
      inResponse = true;
      href = lastModified = created = etag = contentType = undefined;
      length = quotaUsed = quotaAvailable = undefined;
      collection = false;
    } else if (inResponse && key === 'propstat') {
      inPropstat = true;
      status = '';
      pCollection = false;
      pLength = pModified = pCreated = pEtag = pType = pUsed = pAvailable = undefined;
    } else if (inPropstat && key === 'prop') {
      inProp = true;
    } else if (inProp && key === 'collection' && stack[stack.length - 2] === 'resourcetype') {
      pCollection = true;
    }
  });
  parser.on('text', (t) => {
    if (inText) text += t;
  });
  parser.on('cdata', (t) => {
    if (inText) text += t;
  });
  parser.on('closetag', () => {
    while (scope[scope.length - 1]!.depth === stack.length) scope.pop();
    const key = stack.pop();
    inText = false;
    if (!inResponse) return;
    const parent = stack[stack.length - 1];
    if (inProp && parent === 'prop') {
      switch (key) {
        case 'getcontentlength':
          pLength = text;
          break;
        case 'getlastmodified':
          pModified = text;
          break;
        case 'creationdate':
          pCreated = text;
          break;
        case 'getetag':
          pEtag = text;
          break;
        case 'getcontenttype':
          pType = text;
          break;
        case 'quota-used-bytes':
          pUsed = text;
          break;
        case 'quota-available-bytes':
          pAvailable = text;
          break;
      }
    } else if (key === 'href' && parent === 'response') href = text.trim();
    else if (key === 'status' && parent === 'propstat') status = text;
    else if (key === 'prop') inProp = false;
    else if (key === 'propstat') {
      inPropstat = inProp = false;
      if (GOOD_STATUS.test(` ${status}`)) {
        // A value the server sent but that does not read keeps what an earlier propstat gave.
        if (pCollection) collection = true;
        if (pLength !== undefined) length = int(pLength) ?? length;
        if (pModified !== undefined) lastModified = date(pModified) ?? lastModified;
        if (pCreated !== undefined) created = date(pCreated) ?? created;
        if (pEtag !== undefined) etag = pEtag.trim() || etag;
        if (pType !== undefined) contentType = pType.trim() || contentType;
        if (pUsed !== undefined) quotaUsed = int(pUsed) ?? quotaUsed;
        if (pAvailable !== undefined) quotaAvailable = int(pAvailable) ?? quotaAvailable;
      }
    } else if (key === 'response') {
      inResponse = inPropstat = inProp = false;
      if (href !== undefined) out.push({ href, collection, length, lastModified, created, etag, contentType, quotaUsed, quotaAvailable });
    }
  });

  const decoder = new TextDecoder('utf-8');
  try {
    for await (const chunk of body) parser.write(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    parser.write(decoder.decode());
    parser.close();
  } catch (e) {
    // Network errors (they carry a `code`) go to the caller's mapping; anything else is bad XML.
    if (e instanceof ServiceError || (e && typeof e === 'object' && 'code' in e)) throw e;
    throw new ServiceError('upstream_error', `The WebDAV server sent an unreadable answer: ${(e as Error).message}`, {}, { cause: e });
  }
  return out;
}
