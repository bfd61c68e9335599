/**
 * Streaming parser of a WebDAV 207 Multi-Status body. Elements are matched by namespace URI
 * and local name, never by prefix (Apache answers `lp1:getetag`, others `d:getetag`). Only
 * properties inside a propstat whose status is 2xx are kept.
 */
import type { Readable } from 'node:stream';
import { SaxesParser } from 'saxes';
import { ServiceError } from '../../errors';

const DAV = 'DAV:';

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

type Props = Omit<DavResponse, 'href'>;

const date = (s: string): Date | undefined => {
  const d = new Date(s.trim());
  return Number.isNaN(d.getTime()) ? undefined : d;
};
const int = (s: string): number | undefined => {
  const n = Number(s.trim());
  return s.trim() !== '' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

export async function parseMultistatus(body: Readable | AsyncIterable<Buffer | string>): Promise<DavResponse[]> {
  const parser = new SaxesParser({ xmlns: true });
  const out: DavResponse[] = [];
  const stack: string[] = [];
  let text = '';
  let href: string | undefined;
  let props: Props | undefined;
  let good: Props = { collection: false };
  let status = '';
  let inResponse = false;
  let inProp = false;

  parser.on('opentag', (tag) => {
    const key = tag.uri === DAV ? tag.local : `{${tag.uri}}${tag.local}`;
    stack.push(key);
    text = '';
    if (key === 'response') {
      inResponse = true;
      href = undefined;
      good = { collection: false };
    } else if (inResponse && key === 'propstat') {
      props = { collection: false };
      status = '';
    } else if (props && key === 'prop') {
      inProp = true;
    } else if (props && inProp && key === 'collection' && stack[stack.length - 2] === 'resourcetype') {
      props.collection = true;
    }
  });
  parser.on('text', (t) => (text += t));
  parser.on('cdata', (t) => (text += t));
  parser.on('closetag', () => {
    const key = stack.pop();
    const parent = stack[stack.length - 1];
    if (!inResponse) return;
    if (key === 'href' && parent === 'response') href = text.trim();
    else if (key === 'status' && parent === 'propstat') status = text;
    else if (props && inProp && parent === 'prop') {
      switch (key) {
        case 'getcontentlength':
          props.length = int(text);
          break;
        case 'getlastmodified':
          props.lastModified = date(text);
          break;
        case 'creationdate':
          props.created = date(text);
          break;
        case 'getetag':
          props.etag = text.trim() || undefined;
          break;
        case 'getcontenttype':
          props.contentType = text.trim() || undefined;
          break;
        case 'quota-used-bytes':
          props.quotaUsed = int(text);
          break;
        case 'quota-available-bytes':
          props.quotaAvailable = int(text);
          break;
      }
    } else if (key === 'prop') inProp = false;
    else if (key === 'propstat') {
      if (props && /\s2\d\d\s?/.test(` ${status.trim()} `)) {
        for (const [k, v] of Object.entries(props)) if (v !== undefined && (k !== 'collection' || v)) (good as Record<string, unknown>)[k] = v;
      }
      props = undefined;
    } else if (key === 'response') {
      inResponse = false;
      if (href !== undefined) out.push({ href, ...good });
    }
    text = '';
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
