/**
 * A tokenizer for the one document a listing reads, a 207 Multi-Status answer. It jumps from
 * `<` to `<` with `indexOf` instead of reading character by character: a tag's name is the text
 * up to its `>`, checked once per distinct name; the text between tags is one `slice`, entities
 * are decoded only where a `&` is; attributes are read only on tags that have some.
 *
 * It accepts exactly the documents saxes (the reference, xml.ts) accepts and hands the reader
 * the same events, so a listing is the same either way; a body it would not read the same way
 * is refused at its prolog (`write` returns false) and saxes reads the whole of it. Inside the
 * root it reads comments, CDATA and processing instructions itself. Errors are thrown as plain
 * Errors, as saxes throws them, and become the same upstream_error.
 */
/** What the scanner hands on (MultistatusReader in xml.ts; saxes hands it the same). */
export interface MultistatusHandlers {
  /** Whether character data given now is used: the scanner slices text only then. */
  readonly inText: boolean;
  attribute(name: string, value: string): void;
  /** An element starts; its name as written, split at the first colon. */
  openSplit(prefix: string, local: string): void;
  text(t: string): void;
  close(): void;
}

// XML 1.0 (5th ed.) §2.3 Name; the same sets saxes checks.
const NAME_START = ':A-Z_a-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\u{10000}-\u{EFFFF}';
const NAME_CHAR = `${NAME_START}\\-.0-9\u00B7\u0300-\u036F\u203F-\u2040`;
const NAME = new RegExp(`^[${NAME_START}][${NAME_CHAR}]*$`, 'u');
/**
 * Characters XML 1.0 disallows anywhere (§2.2), lone surrogates included (the `u` flag leaves
 * pairs alone). Decoded UTF-8 has no lone surrogates; saxes reads one in a string chunk as
 * half of a pair with the next character, which no server's answer holds: here it is an error.
 */
// oxlint-disable-next-line no-control-regex -- these are the characters looked for
const BAD_CHAR = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF\uD800-\uDFFF]/u;
/** The one XML declaration the scanner reads itself (version 1.0: 1.1 has other character rules). */
const XML_DECL =
  /^<\?xml[ \t\n]+version[ \t\n]*=[ \t\n]*(["'])1\.0\1(?:[ \t\n]+encoding[ \t\n]*=[ \t\n]*(["'])[A-Za-z][A-Za-z0-9._-]*\2)?(?:[ \t\n]+standalone[ \t\n]*=[ \t\n]*(["'])(?:yes|no)\3)?[ \t\n]*\?>/;
const SPACES = /[ \t\n]*/y;
const ONLY_SPACES = /^[ \t\n]*$/;
const TRAILING_SPACES = /[ \t\n]+$/;
/** A start tag with attributes (names are checked against NAME afterwards). */
const TAG = /<([^\s/>"'=<]+)((?:[ \t\n]+[^\s/>"'=<]+[ \t\n]*=[ \t\n]*(?:"[^"<]*"|'[^'<]*'))*)[ \t\n]*(\/?)>/y;
const ATTRIBUTE = /[ \t\n]+([^\s/>"'=<]+)[ \t\n]*=[ \t\n]*(?:"([^"<]*)"|'([^'<]*)')/g;
const HEX_REF = /^#x[0-9a-fA-F]+$/;
const DEC_REF = /^#[0-9]+$/;
/** Past any index: "not in this buffer". */
const NONE = Number.MAX_SAFE_INTEGER;
/** Start tags read, kept up to this many (a Multi-Status has a few dozen different ones). */
const KNOWN_TAGS = 1024;
/** A prolog longer than this without the root's start goes to saxes. */
const PROLOG_MAX = 64 * 1024;

const enum Stage {
  Prolog,
  Root,
  After,
}
const enum Wait {
  Nothing,
  /** Text whose end (a `<`) has not arrived. */
  Text,
  /** A tag, comment, CDATA section or processing instruction: each ends with a `>`. */
  Markup,
}

function malformed(message: string): Error {
  return new Error(message);
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw malformed(`disallowed character in name: ${name}.`);
}

/** A start tag as read: its name, split at the first colon, its attributes (name, value, …), and whether it is also its end. */
interface Tag {
  /** Its text between `<` and `>`. */
  text: string;
  /** The start tag that came after this one last time (the next is most often the same). */
  next: Tag | undefined;
  name: string;
  prefix: string;
  local: string;
  attributes: string[];
  empty: boolean;
}

function isXmlChar(c: number): boolean {
  return (c >= 0x20 && c <= 0xd7ff) || c === 0x0a || c === 0x0d || c === 0x09 || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

function entity(name: string): string {
  switch (name) {
    case 'amp':
      return '&';
    case 'lt':
      return '<';
    case 'gt':
      return '>';
    case 'quot':
      return '"';
    case 'apos':
      return "'";
  }
  let c = NaN;
  if (name[1] === 'x' && HEX_REF.test(name)) c = parseInt(name.slice(2), 16);
  else if (DEC_REF.test(name)) c = parseInt(name.slice(1), 10);
  if (!isXmlChar(c)) throw malformed(`undefined or malformed entity: &${name};`);
  return String.fromCodePoint(c);
}

/** `t` with its entity and character references replaced; each `&` must end at a `;` within `t`. */
function decodeEntities(t: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const amp = t.indexOf('&', i);
    if (amp < 0) return out + t.slice(i);
    const semi = t.indexOf(';', amp + 1);
    if (semi < 0) throw malformed('unterminated entity.');
    out += t.slice(i, amp) + entity(t.slice(amp + 1, semi));
    i = semi + 1;
  }
}

export class MultistatusScanner {
  /** Text not read yet: the unfinished end of what came so far. */
  private buf = '';
  /** A last `\r` or high surrogate, held until the next chunk says what it is. */
  private carry = '';
  /** Everything given, kept until the root starts, for a hand-over to saxes. */
  private given: string[] | undefined = [];
  private stage = Stage.Prolog;
  private wait = Wait.Nothing;
  /** Where the text added by the last write starts in `buf`. */
  private fresh = 0;
  /** Names of the open elements, as written. */
  private readonly names: string[] = [];
  /** Start tags read so far, by their text between `<` and `>`. */
  private readonly tags = new Map<string, Tag>();
  /** The last start tag read from `tags`. */
  private last: Tag | undefined;
  /** The next `&` and `]]>` in `buf` at or after the last search (-1: not searched in this `buf`). */
  private ampAt = -1;
  private brkAt = -1;
  /** How much of `buf` was searched for the end of the construct waited for (it starts at 0). */
  private searched = 0;
  /** Where the end of a comment, CDATA section or instruction at 0 may be, when it was waited for. */
  private resume = 0;

  constructor(private readonly reader: MultistatusHandlers) {}

  /** Reads more of the body; false when the body is for saxes instead (nothing was handed to the reader). */
  write(chunk: string): boolean {
    this.given?.push(chunk);
    let text = this.carry + chunk;
    this.carry = '';
    const last = text.charCodeAt(text.length - 1);
    if (last === 0x0d || (last >= 0xd800 && last <= 0xdbff)) {
      this.carry = text.slice(-1);
      text = text.slice(0, -1);
    }
    this.add(text);
    if (this.stage === Stage.Prolog) {
      const root = this.prolog();
      if (root === false) return false;
      if (root === undefined) return true;
      this.stage = Stage.Root;
      this.given = undefined;
      this.wait = Wait.Nothing;
      this.scan(root);
    } else this.scan(0);
    return true;
  }

  /** What was given so far, for saxes to read from the start. */
  held(): string {
    return (this.given ?? []).join('');
  }

  end(): void {
    // A last `\r` is a line end (whitespace), a last high surrogate is alone.
    if (this.carry === '\r') this.add('\n');
    else if (this.carry) throw malformed('disallowed character.');
    this.carry = '';
    if (this.stage === Stage.Prolog) throw malformed('document must contain a root element.');
    if (this.names.length > 0) throw malformed(`unclosed tag: ${this.names[this.names.length - 1]}`);
    if (!ONLY_SPACES.test(this.buf)) throw malformed('unexpected end.');
  }

  /** Appends decoded text: checks its characters and turns line ends into `\n`, as XML reads them. */
  private add(text: string): void {
    if (BAD_CHAR.test(text)) throw malformed('disallowed character.');
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    this.fresh = this.buf.length;
    this.buf += text;
    this.ampAt = this.brkAt = -1;
  }

  /**
   * Where the root element starts, if the prolog is nothing but an optional XML 1.0 declaration
   * and whitespace; false for any other prolog (saxes reads it); undefined while it may still be either.
   */
  private prolog(): number | false | undefined {
    const buf = this.buf;
    // Undecided past PROLOG_MAX (a long run of spaces): saxes reads it.
    const undecided = buf.length > PROLOG_MAX ? false : undefined;
    let i = 0;
    if (buf.startsWith('<?xml') && /^<\?xml[ \t\n?]/.test(buf.slice(0, 6))) {
      const end = buf.indexOf('?>');
      if (end < 0) return undecided;
      if (!XML_DECL.test(buf.slice(0, end + 2))) return false;
      i = end + 2;
    } else if (buf.length < 6 && '<?xml '.startsWith(buf)) return undecided;
    SPACES.lastIndex = i;
    SPACES.test(buf);
    i = SPACES.lastIndex;
    if (i + 1 >= buf.length) return undecided;
    if (buf.charCodeAt(i) !== 60) return false;
    const c = buf.charCodeAt(i + 1);
    return c === 33 || c === 63 || c === 47 ? false : i;
  }

  /** Reads `buf` from `pos` as far as it is complete and keeps the rest. */
  private scan(pos: number): void {
    let buf = this.buf;
    // A construct waiting for its end cannot end before a new `>` (markup) or `<` (text).
    if (this.wait === Wait.Markup && buf.indexOf('>', this.fresh) < 0) return;
    // The construct waited for starts at 0; its end is looked for again only past what was searched.
    this.resume = this.wait === Wait.Markup ? Math.max(0, this.searched - 2) : 0;
    let from = this.wait === Wait.Text ? Math.max(pos, this.fresh) : pos;
    this.wait = Wait.Nothing;
    for (;;) {
      const lt = buf.indexOf('<', from);
      if (lt < 0) {
        if (pos < buf.length) this.wait = Wait.Text;
        break;
      }
      if (lt > pos) this.chars(pos, lt);
      pos = lt;
      const c = buf.charCodeAt(lt + 1);
      let next: number;
      if (c === 47) next = this.closeTag(lt);
      else if (c === 33) next = this.bang(lt);
      else if (c === 63) next = this.instruction(lt);
      else if (c === c) next = this.openTag(lt);
      else next = -1;
      if (next < 0) {
        this.wait = Wait.Markup;
        this.searched = buf.length - lt;
        break;
      }
      pos = from = next;
    }
    this.buf = buf = pos === 0 ? buf : buf.slice(pos);
  }

  /** Character data between tags, from `from` to `to` (a `<`). */
  private chars(from: number, to: number): void {
    const buf = this.buf;
    if (this.stage !== Stage.Root) {
      if (!ONLY_SPACES.test(buf.slice(from, to))) throw malformed('text data outside of root node.');
      return;
    }
    if (this.brkAt < from) {
      const brk = buf.indexOf(']]>', from);
      this.brkAt = brk < 0 ? NONE : brk;
    }
    if (this.brkAt + 2 < to) throw malformed('the string "]]>" is disallowed in char data.');
    if (this.ampAt < from) {
      const amp = buf.indexOf('&', from);
      this.ampAt = amp < 0 ? NONE : amp;
    }
    if (this.ampAt < to) {
      const text = decodeEntities(buf.slice(from, to));
      this.reader.text(text);
    } else if (this.reader.inText) this.reader.text(buf.slice(from, to));
  }

  private start(tag: Tag): void {
    const attributes = tag.attributes;
    for (let i = 0; i < attributes.length; i += 2) this.reader.attribute(attributes[i]!, attributes[i + 1]!);
    this.names.push(tag.name);
    this.reader.openSplit(tag.prefix, tag.local);
    if (tag.empty) this.close();
  }

  private close(): void {
    this.names.pop();
    this.reader.close();
    if (this.names.length === 0) this.stage = Stage.After;
  }

  private openTag(lt: number): number {
    if (this.stage === Stage.After) throw malformed('documents may contain only one root.');
    const buf = this.buf;
    // A tag read before, to the same first `>`, reads the same: first the one that came after
    // the last tag the last time, compared in place, then any by its text.
    const last = this.last;
    const guess = last?.next;
    if (guess !== undefined) {
      const end = lt + 1 + guess.text.length;
      if (buf.charCodeAt(end) === 62 && buf.startsWith(guess.text, lt + 1)) {
        this.last = guess;
        this.start(guess);
        return end + 1;
      }
    }
    const gt = buf.indexOf('>', lt + 1);
    if (gt < 0) return -1;
    const known = this.tags.get(buf.slice(lt + 1, gt));
    if (known) {
      if (last) last.next = known;
      this.last = known;
      this.start(known);
      return gt + 1;
    }
    TAG.lastIndex = lt;
    const m = TAG.exec(buf);
    if (!m) {
      // No `<` can be inside a tag: with one further on, this tag is malformed, else it may be unfinished.
      if (buf.indexOf('<', lt + 1) >= 0) throw malformed('malformed start tag.');
      return -1;
    }
    const name = m[1]!;
    checkName(name);
    const attributes: string[] = [];
    if (m[2]) {
      ATTRIBUTE.lastIndex = 0;
      for (let a = ATTRIBUTE.exec(m[2]); a; a = ATTRIBUTE.exec(m[2])) {
        const attr = a[1]!;
        checkName(attr);
        for (let i = 0; i < attributes.length; i += 2) if (attributes[i] === attr) throw malformed(`duplicate attribute: ${attr}.`);
        let value = a[2] ?? a[3]!;
        // Attribute-value normalization (XML 1.0 §3.3.3): a literal tab or line end is a space.
        if (value.includes('\t') || value.includes('\n')) value = value.replace(/[\t\n]/g, ' ');
        if (value.includes('&')) value = decodeEntities(value);
        attributes.push(attr, value);
      }
    }
    const colon = name.indexOf(':');
    const tag: Tag = { text: '', next: undefined, name, prefix: colon < 0 ? '' : name.slice(0, colon), local: colon < 0 ? name : name.slice(colon + 1), attributes, empty: m[3] === '/' };
    const end = TAG.lastIndex;
    if (end === gt + 1 && this.tags.size < KNOWN_TAGS) {
      tag.text = buf.slice(lt + 1, gt);
      this.tags.set(tag.text, tag);
      if (last) last.next = tag;
      this.last = tag;
    }
    this.start(tag);
    return end;
  }

  private closeTag(lt: number): number {
    const buf = this.buf;
    const gt = buf.indexOf('>', lt + 2);
    if (gt < 0) return -1;
    const open = this.names[this.names.length - 1];
    // `</name>` compared in place; anything else (spaces before `>`, another name) is sliced.
    if (open === undefined || gt !== lt + 2 + open.length || !buf.startsWith(open, lt + 2)) {
      const name = buf.slice(lt + 2, gt);
      if (open === undefined || name.replace(TRAILING_SPACES, '') !== open) throw malformed(`unexpected close tag: ${name}.`);
    }
    this.close();
    return gt + 1;
  }

  /** `<!`: a comment or CDATA section (a DOCTYPE is past its place here; anything else is malformed). */
  private bang(lt: number): number {
    const buf = this.buf;
    if (buf.startsWith('<!--', lt)) {
      const dashes = buf.indexOf('--', Math.max(lt + 4, lt === 0 ? this.resume : 0));
      if (dashes < 0 || dashes + 2 >= buf.length) return -1;
      if (buf.charCodeAt(dashes + 2) !== 62) throw malformed('malformed comment.');
      return dashes + 3;
    }
    if (buf.startsWith('<![CDATA[', lt)) {
      if (this.stage !== Stage.Root) throw malformed('text data outside of root node.');
      const end = buf.indexOf(']]>', Math.max(lt + 9, lt === 0 ? this.resume - 1 : 0));
      if (end < 0) return -1;
      this.reader.text(buf.slice(lt + 9, end));
      return end + 3;
    }
    const rest = buf.slice(lt, lt + 9);
    if (rest.length < 9 && ('<!--'.startsWith(rest) || '<![CDATA['.startsWith(rest))) return -1;
    throw malformed('incorrect syntax or misplaced DOCTYPE.');
  }

  /** `<?target body?>`: skipped; its target must be a name other than `xml` in any case. */
  private instruction(lt: number): number {
    const buf = this.buf;
    const end = buf.indexOf('?>', Math.max(lt + 2, lt === 0 ? this.resume : 0));
    if (end < 0) return -1;
    const inside = buf.slice(lt + 2, end);
    const stop = inside.search(/[ \t\n?]/);
    const target = stop < 0 ? inside : inside.slice(0, stop);
    if (!NAME.test(target) || target.toLowerCase() === 'xml') throw malformed('malformed processing instruction.');
    return end + 2;
  }
}
