/**
 * The Multi-Status scanner against saxes, the reference it must equal (RFC 4918 §13 Multi-Status,
 * §14 XML elements matched by namespace URI). Random 207 bodies are written the many ways servers
 * write them (prefixes and where they are declared, a default namespace, entities and character
 * references, CDATA, comments, processing instructions, unicode, non-2xx propstats, missing
 * properties), cut into chunks at random bytes (inside a UTF-8 sequence, inside a tag), and read
 * by both: the same responses, or both refuse the body with an upstream_error. Then the same
 * bodies broken at random (truncated, a tag mismatched, a character inserted or deleted, …).
 */
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src-main/errors';
import { parseMultistatus, parseMultistatusSaxes, rfc1123, rfc3339, type DavResponse } from '../../src-main/connectors/webdav/xml';

const RUNS = Number(process.env.MULTISTATUS_RUNS ?? 3000);

/** A small seeded generator: one fast-check integer drives every choice of a document. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    chance: (p: number) => next() < p,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
  };
}
type Rng = ReturnType<typeof prng>;

const CHARS = ['a', 'b', 'Z', '0', '7', ' ', '-', '.', '%', '/', '&', '<', '>', '"', "'", ']', ']]>', 'é', 'ü', '日本', '😀', '\t', '\n', '\r\n', '\u00a0', ';', '#'];
const RFC1123 = ['2026-11-24T18:48:55Z', '2026-02-30T18:48:55Z', '0050-11-24T18:48:55Z', '2026-11-24T18:48:60Z', 'Sat, 21 Nov 2026 06:21:51 GMT', 'Tue, 01 Jan 1980 00:00:00 GMT', 'Mon, 31 Feb 2026 23:59:59 GMT', 'Sun, 29 Feb 2028 12:00:00 GMT', 'Xyz, 21 Nov 2026 06:21:51 GMT', 'Sat, 21 nov 2026 06:21:51 GMT', 'Sat, 21 Nov 0050 06:21:51 GMT', 'Sat, 21 Nov 2026 24:00:00 GMT', 'Sat, 21 Nov 2026 23:59:60 GMT', 'Sat, 00 Nov 2026 06:21:51 GMT', 'Sat, 21 Nov 2026 06:21:51 UTC', '2026-11-21T06:21:51Z', '2026-11-21T06:21:51.123+02:00', 'yesterday', ''];
const STATUSES = ['HTTP/1.1 200 OK', 'HTTP/1.1 404 Not Found', 'HTTP/1.1 403 Forbidden', 'HTTP/1.1 207 Multi-Status', ' HTTP/1.1 200 OK ', '200', 'HTTP/1.1\t201 Created', 'HTTP/1.1 2000', 'garbage'];
const PROPS = ['getcontentlength', 'getlastmodified', 'creationdate', 'getetag', 'getcontenttype', 'quota-used-bytes', 'quota-available-bytes', 'displayname'];

function randomText(r: Rng, max: number): string {
  let s = '';
  const n = r.int(max);
  for (let i = 0; i < n; i++) s += r.pick(CHARS);
  return s;
}

/** Character data for `value`: references, CDATA sections and comments chosen at random. */
function charData(r: Rng, value: string): string {
  if (r.chance(0.1) && !value.includes(']]>')) return `<![CDATA[${value}]]>`;
  let out = '';
  for (const ch of value) {
    if (r.chance(0.08)) out += r.pick(['<!-- note -->', '<!---->', '<?pi body?>', '<![CDATA[]]>']);
    if (ch === '&') out += r.pick(['&amp;', '&#38;', '&#x26;']);
    else if (ch === '<') out += r.pick(['&lt;', '&#60;', '&#x3C;']);
    else if (ch === '>') out += out.endsWith(']]') ? '&gt;' : r.pick(['>', '&gt;', '&#62;']);
    else if (ch === ']') out += r.pick([']', '&#93;']);
    else if (r.chance(0.1)) out += `&#x${ch.codePointAt(0)!.toString(16)};`;
    else if (r.chance(0.05)) out += `&#${ch.codePointAt(0)!};`;
    else out += ch;
  }
  return out;
}

/** A Multi-Status body, written with random namespace prefixes, declarations, spacing and markup. */
function multistatus(r: Rng): string {
  const ws = () => r.pick(['', '', '\n', ' ', '\r\n', '\n  ', '\t']);
  // Prefixes bound to DAV: in scope, per depth; '' means the default namespace is DAV:.
  type Scope = { dav: string[]; other: string[] };
  const element = (scope: Scope, local: string, attrs: string[], body: (s: Scope) => string, foreign = false): string => {
    const s: Scope = { dav: [...scope.dav], other: [...scope.other] };
    const decl: string[] = [...attrs];
    const declared = (n: string) => decl.some((a) => a.startsWith(`${n}=`));
    const p = r.pick(['D', 'd', 'lp1', 'g0', 'a.b', 'x-y', 'ns0', 'é']);
    if (r.chance(0.15) && !declared(`xmlns:${p}`)) {
      decl.push(`xmlns:${p}="DAV:"`);
      s.dav = [...s.dav.filter((x) => x !== p), p];
      s.other = s.other.filter((x) => x !== p);
    }
    if (r.chance(0.05) && !declared('xmlns')) {
      decl.push(`xmlns="${r.pick(['DAV:', 'urn:other', 'DA&#86;:'])}"`);
      const uri = decl[decl.length - 1]!;
      s.dav = s.dav.filter((x) => x !== '');
      s.other = s.other.filter((x) => x !== '');
      if (uri.includes('"DAV:"') || uri.includes('DA&#86;:')) s.dav.push('');
      else s.other.push('');
    }
    if (r.chance(0.03) && !declared('xmlns:o')) {
      decl.push('xmlns:o="urn:other"');
      s.dav = s.dav.filter((x) => x !== 'o');
      s.other = [...s.other.filter((x) => x !== 'o'), 'o'];
    }
    const pool = foreign ? (s.other.length ? s.other : ['undeclared']) : s.dav.length ? s.dav : ['undeclared'];
    const prefix = r.pick(pool);
    const name = prefix ? `${prefix}:${local}` : local;
    const attrText = decl.map((a) => `${r.pick([' ', '\n', ' \t'])}${r.chance(0.1) ? a.replace('=', ' = ') : r.chance(0.1) ? a.replace(/"/g, "'") : a}`).join('');
    const inner = body(s);
    if (inner === '' && r.chance(0.5)) return `<${name}${attrText}${r.pick(['', ' '])}/>`;
    return `<${name}${attrText}>${inner}</${name}${r.pick(['', '', ' ', '\n'])}>`;
  };
  const propValue = (prop: string): string => {
    switch (prop) {
      case 'getcontentlength':
      case 'quota-used-bytes':
      case 'quota-available-bytes':
        return r.pick(['0', '12', ' 42 ', '9007199254740993', '-1', '1e3', '', 'x', String(r.int(1e9))]);
      case 'getlastmodified':
      case 'creationdate':
        return r.pick(RFC1123);
      case 'getetag':
        return r.pick(['"0-6610a2974977c"', 'W/"c-660c3605533f7"', '', ' "a&b" ', randomText(r, 6)]);
      default:
        return randomText(r, 8);
    }
  };
  const response = (scope: Scope) =>
    element(scope, 'response', r.chance(0.5) ? ['xmlns:lp1="DAV:"', 'xmlns:lp2="http://apache.org/dav/props/"'] : [], (s) => {
      let out = ws();
      if (!r.chance(0.05)) out += element(s, 'href', [], () => charData(r, `/dav/${randomText(r, 10)}${r.chance(0.3) ? '/' : ''}`)) + ws();
      for (let n = r.int(3); n >= 0; n--) {
        out +=
          element(s, 'propstat', [], (ps) => {
            let props = ws();
            props += element(ps, 'prop', [], (pp) => {
              let p = ws();
              if (r.chance(0.7)) p += element(pp, 'resourcetype', [], (rs) => (r.chance(0.3) ? element(rs, 'collection', [], () => '') : r.chance(0.1) ? ws() : '')) + ws();
              for (const prop of PROPS) {
                if (r.chance(0.6)) p += element(pp, prop, [], () => charData(r, propValue(prop))) + ws();
                if (r.chance(0.05)) p += element(pp, prop, [], () => charData(r, propValue(prop)), true) + ws();
              }
              if (r.chance(0.05)) p += '<!-- between props -->';
              return p;
            });
            props += ws() + element(ps, 'status', [], () => charData(r, r.pick(STATUSES))) + ws();
            return props;
          }) + ws();
      }
      return out;
    });
  const top: Scope = { dav: [], other: [] };
  const rootAttrs = r.pick([['xmlns:D="DAV:"'], ['xmlns="DAV:"'], ['xmlns:d="DAV:"', 'xmlns:ns0="DAV:"'], ['xmlns:D="DAV:"', 'xmlns="urn:other"'], []]);
  for (const a of rootAttrs) {
    const m = /^xmlns(?::(.+))?="(.*)"$/.exec(a)!;
    (m[2] === 'DAV:' ? top.dav : top.other).push(m[1] ?? '');
  }
  const prolog = r.pick([
    '',
    '<?xml version="1.0" encoding="utf-8"?>\n',
    "<?xml version='1.0'?>",
    '<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>\r\n',
    '\n',
    '<!-- before the root -->\n',
    '<!DOCTYPE multistatus>\n',
    '<?xml version="1.1"?>',
    '<?xml-stylesheet href="a"?>',
  ]);
  const epilog = r.pick(['', '\n', '\n<!-- after -->\n', '<?done?>', ' \r\n']);
  const body = element(top, 'multistatus', rootAttrs, (s) => {
    let out = ws();
    for (let n = r.int(4); n > 0; n--) out += response(s) + ws();
    if (r.chance(0.1)) out += element(s, 'responsedescription', [], () => charData(r, randomText(r, 5)));
    return out;
  });
  return prolog + body + epilog;
}

/** Breaks a body at random: most of these are no longer well-formed, some still are. */
function mutate(r: Rng, doc: string): string {
  const at = r.int(doc.length + 1);
  switch (r.int(11)) {
    case 0:
      return doc.slice(0, at);
    case 1:
      return doc.slice(0, at) + doc.slice(at + 1);
    case 2:
      return doc.slice(0, at) + r.pick(['<', '>', '&', '/', '"', "'", '=', ']]>', '\u0001', '\uffff', '&bogus;', '&#0;', '&#xD800;', '<!--', '<![CDATA[', '<?', '<?xml ?>', '</x>', '<x>', ' ', '\r', '<!DOCTYPE x>', ':', '--', '&#x41', '\ud800']) + doc.slice(at);
    case 3: {
      const close = doc.indexOf('</', at);
      return close < 0 ? doc + '</a>' : `${doc.slice(0, close + 2)}x${doc.slice(close + 2)}`;
    }
    case 4: {
      const open = doc.indexOf('<', at);
      return open < 0 ? doc : doc.slice(0, open) + doc.slice(doc.indexOf('>', open) + 1);
    }
    case 5: {
      const gt = doc.indexOf('>', at);
      return gt < 0 ? doc : `${doc.slice(0, gt)} ${r.pick(['a="1" a="2"', 'b=1', 'c', 'd="<"', 'e="x"f="y"', 'xmlns:q="DAV:"', "g='&amp;'"])}${doc.slice(gt)}`;
    }
    case 6:
      return doc + r.pick(['<b/>', 'text', '<![CDATA[x]]>', '<!--x-->', '<?x?>', '<?xml version="1.0"?>', '&amp;']);
    case 7:
      return doc.replace(/&amp;|&lt;|&#x26;/, r.pick(['&', '&am;', '&AMP;', '&#X26;', '&#x110000;', '&#xFFFE;']));
    case 8:
      return doc.slice(0, at) + doc.slice(at).replace('-->', r.pick(['-- >', '--->', '->']));
    case 9: {
      // Into character data: just after a tag.
      const gt = doc.indexOf('>', at);
      return gt < 0 ? doc : doc.slice(0, gt + 1) + r.pick([']]>', 'a]]>b', ']]]>', '&bogus;', '&#0;', '&', '&#x10FFFF;', '\u0001', '<![CDATA[x]]>', '<![CDATA[]]]]>', '<!--c-->', '<?t?>']) + doc.slice(gt + 1);
    }
    default:
      return doc.replace(/[a-z]/g, (c) => (r.chance(0.02) ? c.toUpperCase() : c));
  }
}

/** `text` as UTF-8, cut at random byte positions (inside characters and tags alike). */
function chunks(r: Rng, text: string): Buffer[] {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  let i = 0;
  while (i < bytes.length) {
    const n = r.chance(0.3) ? 1 + r.int(3) : 1 + r.int(40);
    out.push(bytes.subarray(i, i + n));
    i += n;
  }
  return out;
}

type Outcome = { ok: true; value: DavResponse[] } | { ok: false; code: string; message: string };
async function outcome(parse: (body: Buffer[]) => Promise<DavResponse[]>, body: Buffer[]): Promise<Outcome> {
  try {
    return { ok: true, value: await parse(body) };
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e;
    return { ok: false, code: e.code, message: e.message };
  }
}

/** The same responses, or both refused with the same code (the messages differ). */
const same = (a: Outcome, b: Outcome) => (a.ok && b.ok ? isDeepStrictEqual(a.value, b.value) : !a.ok && !b.ok && a.code === b.code);

describe('WebDAV Multi-Status scanner equals saxes (RFC 4918 §13, §14)', () => {
  it('reads random well-formed bodies, cut anywhere, exactly as saxes does', async () => {
    let responses = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const r = prng(seed);
        const doc = multistatus(r);
        const body = chunks(r, doc);
        const reference = await outcome(parseMultistatusSaxes, body);
        const scanned = await outcome(parseMultistatus, body);
        if (!same(scanned, reference)) expect({ doc, scanned }).toEqual({ doc, scanned: reference });
        // The generator writes only well-formed bodies: saxes accepts each.
        if (!reference.ok) expect({ doc, reference }).toEqual({ doc, reference: { ok: true } });
        else responses += reference.value.length;
      }),
      { numRuns: RUNS },
    );
    // The bodies held responses to compare, not only empty lists.
    expect(responses).toBeGreaterThan(RUNS);
  });

  it('refuses the same broken bodies as saxes, with an upstream_error, and reads the others the same', async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const r = prng(seed);
        const doc = mutate(r, multistatus(r));
        const body = chunks(r, doc);
        const reference = await outcome(parseMultistatusSaxes, body);
        const scanned = await outcome(parseMultistatus, body);
        if (!same(scanned, reference)) expect({ doc, scanned }).toEqual({ doc, scanned: reference });
        if (!reference.ok) {
          expect(reference.code).toBe('upstream_error');
          refused++;
        }
      }),
      { numRuns: RUNS },
    );
    expect(refused).toBeGreaterThan(RUNS / 3);
  });

  it('refuses unclosed, mismatched and truncated bodies in both', async () => {
    const good = '<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/a</D:href></D:response></D:multistatus>';
    const bad = [
      good.slice(0, -1),
      good.replace('</D:multistatus>', ''),
      good.replace('</D:href>', '</D:hrefx>'),
      good.replace('</D:response>', '</d:response>'),
      good.replace('<D:href>', '<D:href><D:x>'),
      '',
      '<?xml version="1.0"?>',
      good + '<D:multistatus xmlns:D="DAV:"/>',
    ];
    // A `--` inside a comment, in a chunk of its own with no `>` after it.
    const split = ['<D:multistatus xmlns:D="DAV:"><!-- a', ' -- b', ' c --></D:multistatus>'];
    for (const body of [...bad.map((doc) => [doc]), split]) {
      const chunks = body.map((c) => Buffer.from(c));
      await expect(parseMultistatusSaxes(chunks), body.join('')).rejects.toMatchObject({ code: 'upstream_error' });
      await expect(parseMultistatus(chunks), body.join('')).rejects.toMatchObject({ code: 'upstream_error' });
    }
  });

  it('decodes UTF-8 cut anywhere, bad sequences and a byte order mark included, as TextDecoder does', async () => {
    const BYTES = [0x41, 0xc3, 0xa9, 0xe6, 0x97, 0xa5, 0xf0, 0x9f, 0x98, 0x80, 0x80, 0xbf, 0xc0, 0xf5, 0xff, 0xed, 0xa0, 0x80, 0xef, 0xbb, 0xbf, 0xe0, 0xf4, 0x90];
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.boolean(), async (seed, bom) => {
        const r = prng(seed);
        const name = Buffer.from(Array.from({ length: r.int(12) }, () => r.pick(BYTES)));
        const doc = Buffer.concat([
          Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []),
          Buffer.from('<D:multistatus xmlns:D="DAV:"><D:response><D:href>/'),
          name,
          Buffer.from('</D:href></D:response></D:multistatus>'),
        ]);
        const body: Buffer[] = [];
        for (let i = 0; i < doc.length; ) {
          const n = 1 + r.int(4);
          body.push(doc.subarray(i, i + n));
          i += n;
        }
        const reference = await outcome(parseMultistatusSaxes, [new TextDecoder().decode(doc)] as unknown as Buffer[]);
        for (const parse of [parseMultistatus, parseMultistatusSaxes]) {
          const got = await outcome(parse, body);
          if (!same(got, reference)) expect({ doc: doc.toString('hex'), got }).toEqual({ doc: doc.toString('hex'), got: reference });
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('reads RFC 3339 creation dates by hand exactly as new Date() does', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        fc.constantFrom('Z', 'z', '+'),
        (y, mo, d, h, m, s, z) => {
          const p = (n: number, w = 2) => String(n).padStart(w, '0');
          const text = `${p(y, 4)}-${p(mo)}-${p(d)}T${p(h)}:${p(m)}:${p(s)}${z}`;
          const fast = rfc3339(text);
          if (fast) expect(fast.getTime(), text).toBe(new Date(text).getTime());
          if (z === 'Z' && y >= 1000 && mo >= 1 && mo <= 12 && d >= 1 && d <= 28 && h <= 23 && m <= 59 && s <= 59) expect(fast, text).toBeDefined();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('reads RFC 1123 dates by hand exactly as new Date() does', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun', 'Xyz'),
        fc.integer({ min: 0, max: 39 }),
        fc.constantFrom('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec', 'nov'),
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        (wd, d, mon, y, h, m, s) => {
          const p = (n: number, w = 2) => String(n).padStart(w, '0');
          const text = `${wd}, ${p(d)} ${mon} ${p(y, 4)} ${p(h)}:${p(m)}:${p(s)} GMT`;
          const fast = rfc1123(text);
          // What the hand reader accepts, new Date() reads to the same instant.
          if (fast) expect(fast.getTime(), text).toBe(new Date(text).getTime());
          // Every ordinary date of this era goes the fast way.
          if (wd !== 'Xyz' && mon !== 'nov' && d >= 1 && d <= 31 && y >= 1000 && h <= 23 && m <= 59 && s <= 59) expect(fast, text).toBeDefined();
        },
      ),
      { numRuns: RUNS },
    );
  });
});
