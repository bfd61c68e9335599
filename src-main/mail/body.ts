/**
 * A message's bodies as Tributary reads them: parsed once from the source, then cached. Also
 * what replying and forwarding need from a body: its whole text (tables laid out, not run
 * together), its HTML made safe to quote inside the compose window, the quote itself, and the
 * inline (`cid:`) images a body refers to.
 */
import type { Attachment } from 'mailparser';
import { parseDocument } from 'htmlparser2';
import type { AnyNode, Element, ParentNode } from 'domhandler';
import type { AttachmentMeta } from './store';

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A text-only body shown as HTML: preformatted, every character literal. */
export const wrapText = (text: string) => `<pre>${escapeHtml(text)}</pre>`;

function snippetOf(text: string | null, html: string | null): string {
  // The first words need only the start of the HTML.
  const src = text ?? (html ? htmlToText(html.slice(0, 64 * 1024), { bare: true }) : '');
  return src.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/**
 * The bodies of a message. The text of an HTML-only message is made here by htmlToText (which
 * reads hostile nesting as words), not by mailparser: its own conversion fails on deep nesting
 * ("Failed to parse HTML", the message would not open) and takes seconds and gigabytes on a
 * large body. That text is the message's `text_body`, its search text and its preview line.
 */
export async function parseBody(raw: Buffer): Promise<{ text: string | null; html: string | null; attachments: AttachmentMeta[]; snippet: string }> {
  const { simpleParser } = await import('mailparser'); // loaded with the first message parsed
  const p = await simpleParser(raw, { skipHtmlToText: true, skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  const html = typeof p.html === 'string' ? p.html : null;
  // With skipHtmlToText an HTML part adds an empty text: an HTML-only message has text "".
  const own = p.text?.trim() ? p.text : null;
  const text = own ?? (html !== null ? htmlToText(html) : (p.text ?? null));
  return {
    text,
    html,
    attachments: p.attachments.map((a, i) => ({ name: a.filename ?? `attachment-${i + 1}`, mimeType: a.contentType, size: a.size ?? a.content.length })),
    snippet: snippetOf(own, html),
  };
}

/** Every part of a message that is not its text or HTML body, in the order of `attachments`. */
export async function messageParts(raw: Buffer): Promise<Attachment[]> {
  const { simpleParser } = await import('mailparser');
  const p = await simpleParser(raw, { skipHtmlToText: true, skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  return p.attachments;
}

// ---- HTML → text -------------------------------------------------------------------------------

const BLOCK = new Set(['p', 'div', 'section', 'article', 'header', 'footer', 'main', 'aside', 'nav', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'dl', 'dt', 'dd', 'pre', 'address', 'figure', 'figcaption', 'hr', 'table', 'center', 'form', 'fieldset']);
const INVISIBLE = new Set(['head', 'style', 'script', 'title', 'template', 'noscript', 'meta', 'link', 'base']);

const isElement = (n: AnyNode): n is Element => n.type === 'tag' || n.type === 'script' || n.type === 'style';

/**
 * The text of an HTML body as a reader sees it: blocks on their own lines, table cells apart
 * (a tab between cells, a line per row), list items marked, a link's target after its text when
 * they differ. Not a layout engine: enough that quoted and forwarded mail reads right.
 * `bare`: the words only, without image texts and link targets (a preview line).
 */
export function htmlToText(html: string, opts: { bare?: boolean } = {}): string {
  let text: string;
  try {
    text = tooDeep(html) ? flatText(html) : htmlText(parseDocument(html, { decodeEntities: true }), opts);
  } catch (e) {
    // Nesting too deep to walk (a hostile message): the words, without layout.
    if (!(e instanceof RangeError)) throw e;
    text = flatText(html);
  }
  return text
    .split('\n')
    .map((l) => l.replace(/[ \t]+$/, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

const TAG = /<(\/?)([a-zA-Z][^\s/>]*)[^>]*?(\/?)>/g;
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** Deeper than any real message: parsing such nesting takes seconds (and walking it, the whole stack). */
export const MAX_HTML_DEPTH = 1500;

/** Whether tags nest deeper than MAX_HTML_DEPTH, by a single scan (no parse). */
function tooDeep(html: string): boolean {
  let depth = 0;
  for (const m of html.matchAll(TAG)) {
    if (m[1]) depth = Math.max(0, depth - 1);
    else if (!m[3] && !VOID.has(m[2]!.toLowerCase()) && ++depth > MAX_HTML_DEPTH) return true;
  }
  return false;
}

/** Tags out, entities of the common kind decoded, whitespace collapsed. */
function flatText(html: string): string {
  return html
    .replace(/<(style|script|head)[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}

/**
 * Text being written, in pieces: appending and looking at its end cost the same however long
 * it grows (a long string's last character is not cheap to read, and a table of thousands of
 * rows asks for it at every cell).
 */
class TextOut {
  private parts: string[] = [];
  /** The last few characters written. */
  private tail = '';

  get mark(): number {
    return this.parts.length;
  }

  push(s: string): void {
    if (!s) return;
    this.parts.push(s);
    this.tail = (this.tail + s).slice(-8);
  }

  get empty(): boolean {
    return this.tail === '';
  }

  endsWith(re: RegExp): boolean {
    return re.test(this.tail);
  }

  /** Everything written since `mark`, removed. */
  take(mark: number): string {
    const s = this.parts.splice(mark).join('');
    this.retail();
    return s;
  }

  /** Drops spaces and tabs at the end. */
  trimBlanks(): void {
    while (this.parts.length) {
      const last = this.parts[this.parts.length - 1]!;
      const t = last.replace(/[ \t]+$/, '');
      if (t === last) break;
      if (t) {
        this.parts[this.parts.length - 1] = t;
        break;
      }
      this.parts.pop();
    }
    this.retail();
  }

  /** Ends the text with at least `n` line breaks (none at the very start). */
  newline(n = 1): void {
    this.trimBlanks();
    if (this.empty) return;
    const have = /\n*$/.exec(this.tail)![0].length;
    if (have < n) this.push('\n'.repeat(n - have));
  }

  toString(): string {
    return this.parts.join('');
  }

  private retail(): void {
    let t = '';
    for (let i = this.parts.length - 1; i >= 0 && t.length < 8; i--) t = this.parts[i]! + t;
    this.tail = t.slice(-8);
  }
}

function htmlText(doc: ParentNode, opts: { bare?: boolean }): string {
  const out = new TextOut();
  const walk = (node: AnyNode, pre: boolean): void => {
    if (node.type === 'text') {
      let t = pre ? node.data : node.data.replace(/\s+/g, ' ');
      if (!pre && (out.empty || out.endsWith(/\s$/))) t = t.replace(/^ /, '');
      out.push(t);
      return;
    }
    if (!isElement(node)) return;
    const name = node.name.toLowerCase();
    if (INVISIBLE.has(name)) return;
    const kids = () => node.children.forEach((c) => walk(c, pre || name === 'pre'));
    switch (name) {
      case 'br':
        out.trimBlanks();
        out.push('\n');
        return;
      case 'tr':
        out.newline();
        kids();
        out.newline();
        return;
      case 'td':
      case 'th': {
        const start = out.mark;
        kids();
        // A cell's own line breaks would split its row.
        out.push(out.take(start).replace(/\s*\n\s*/g, ' ').trim());
        out.push('\t');
        return;
      }
      case 'li':
        out.newline();
        out.push('- ');
        kids();
        out.newline();
        return;
      case 'img': {
        const alt = node.attribs.alt?.trim();
        if (alt && !opts.bare) out.push(`[${alt}]`);
        return;
      }
      case 'a': {
        const start = out.mark;
        kids();
        const inner = out.take(start);
        out.push(inner);
        const href = node.attribs.href?.trim() ?? '';
        const target = href.replace(/^mailto:/i, '');
        if (!opts.bare && /^(https?|mailto):/i.test(href) && target !== inner.trim()) out.push(` <${target}>`);
        return;
      }
      case 'blockquote': {
        out.newline();
        const start = out.mark;
        kids();
        const inner = out.take(start).replace(/\s+$/, '');
        out.push(inner.split('\n').map((l) => (l ? `> ${l}` : '>')).join('\n'));
        out.newline();
        return;
      }
      default: {
        const gap = name === 'p' || /^h\d$/.test(name) ? 2 : 1;
        if (BLOCK.has(name)) out.newline(gap);
        kids();
        if (BLOCK.has(name)) out.newline(gap);
      }
    }
  };
  doc.children.forEach((c) => walk(c, false));
  return out.toString().replace(/\t+(\n|$)/g, '$1');
}

// ---- HTML safe to quote -------------------------------------------------------------------------

/**
 * Dropped with everything inside them. Among them every element whose content a browser reads
 * as raw text (script, style, xmp, iframe, noembed, noframes, noscript, plaintext, textarea,
 * title) while htmlparser2 may read it as markup: what it saw as an attribute value there would
 * be markup in the window. Also foreign content (svg, math), where the two parsers differ too.
 */
const DROP = new Set([
  'script', 'style', 'head', 'title', 'meta', 'link', 'base', 'iframe', 'frame', 'frameset', 'noframes', 'noembed', 'xmp', 'plaintext', 'object', 'embed', 'applet', 'form',
  'template', 'noscript', 'portal', 'svg', 'math', 'input', 'button', 'textarea', 'select', 'option', 'audio', 'video', 'source', 'track', 'canvas', 'dialog',
]);
/** Attributes that carry formatting only. */
const KEEP_ATTRS = new Set(['alt', 'title', 'width', 'height', 'colspan', 'rowspan', 'align', 'valign', 'border', 'cellpadding', 'cellspacing', 'bgcolor', 'color', 'face', 'size', 'dir', 'lang', 'start', 'type', 'span', 'scope', 'headers', 'abbr']);

/**
 * Inline CSS is kept by allowlist, never by looking for what is bad: only these properties,
 * each with a plain value (words, numbers, units, `#` colours, quoted font names, and no
 * function but rgb/rgba/hsl/hsla). Nothing with a `(` can load (url(), image-set(), …), nothing
 * with a `\` can spell one (CSS escapes), and no property here places the quote over the window
 * (no position, z-index, transform).
 */
const CSS_PROPERTY =
  /^(color|background|background-color|font|font-(family|size|weight|style|variant)|line-height|text-(align|indent|transform|decoration|decoration-(line|color|style))|letter-spacing|word-spacing|white-space|word-break|overflow-wrap|vertical-align|direction|(margin|padding)(-(top|right|bottom|left))?|border(-(top|right|bottom|left))?(-(width|style|color))?|border-(collapse|spacing|radius)|(min-|max-)?(width|height)|display|float|clear|list-style-type|list-style-position|table-layout)$/;
const CSS_PLAIN_VALUE = /^(?:[\p{L}\p{N}\s#%.,+\-!_/]|"[^"'\\()<>;:&]*"|'[^"'\\()<>;:&]*'|(?:rgba?|hsla?)\([\d\s.,%/+-]*\))*$/u;

/** The declarations of a style attribute that CSS_PROPERTY and CSS_PLAIN_VALUE allow (an empty string when none). */
export function safeStyle(style: string): string {
  const kept: string[] = [];
  for (const decl of style.split(';')) {
    const colon = decl.indexOf(':');
    if (colon < 0) continue;
    const prop = decl.slice(0, colon).trim().toLowerCase();
    const value = decl.slice(colon + 1).trim();
    if (CSS_PROPERTY.test(prop) && value && !value.includes('/*') && CSS_PLAIN_VALUE.test(value)) kept.push(`${prop}: ${value}`);
  }
  return kept.join('; ');
}

/**
 * A message's HTML reduced to what a quote inside the compose window may hold: markup and
 * inline formatting. No scripts, handlers, styles sheets, forms, frames or remote loads (a
 * quoted tracking pixel would report the reply); links only to http(s) and mailto; images only
 * inline (`cid:`) or `data:image/`; inline CSS by allowlist (safeStyle). It is written out by
 * serialize, which escapes every text and attribute value, so the window parses exactly the
 * tree checked here. The app's CSP is the guard behind it.
 */
export function sanitizeHtml(html: string): string {
  try {
    if (!tooDeep(html)) return sanitizeDocument(html);
    throw new RangeError('nesting');
  } catch (e) {
    // Nesting too deep to walk (a hostile message): its words as text.
    if (!(e instanceof RangeError)) throw e;
    return `<pre>${escapeHtml(flatText(html).trim())}</pre>`;
  }
}

function sanitizeDocument(html: string): string {
  const doc = parseDocument(html, { decodeEntities: true });
  const clean = (parent: ParentNode) => {
    // A copy: nodes are removed from `children` while it is walked.
    for (const node of Array.from(parent.children)) {
      if (node.type === 'comment' || node.type === 'directive' || node.type === 'cdata') {
        removeNode(node);
        continue;
      }
      if (!isElement(node)) continue;
      const name = node.name.toLowerCase();
      if (DROP.has(name)) {
        removeNode(node);
        continue;
      }
      for (const [attr, value] of Object.entries(node.attribs)) {
        const a = attr.toLowerCase();
        delete node.attribs[attr];
        if (a === 'style') {
          const css = safeStyle(value);
          if (css) node.attribs.style = css;
          continue;
        }
        const keep =
          KEEP_ATTRS.has(a) ||
          (a === 'href' && (name === 'a' || name === 'area') && /^\s*(https?:|mailto:)/i.test(value)) ||
          (a === 'src' && name === 'img' && /^\s*(cid:|data:image\/(png|gif|jpe?g|webp);)/i.test(value));
        if (keep) node.attribs[a] = value;
      }
      if (name === 'img' && !node.attribs.src) {
        removeNode(node);
        continue;
      }
      if (name === 'a' && node.attribs.href) {
        node.attribs.target = '_blank';
        node.attribs.rel = 'noopener noreferrer';
      }
      clean(node);
    }
  };
  clean(doc);
  // The body's content when the message is a whole document.
  const body = findBody(doc);
  return serialize(body ? body.children : doc.children).trim();
}

const escapeText = (s: string) => escapeHtml(s).replace(/\u00a0/g, '&nbsp;');
const escapeAttr = (s: string) => escapeText(s).replace(/"/g, '&quot;');
/** Names a browser reads as the same element; an element otherwise named is written as its content only. */
const PLAIN_NAME = /^[a-z][a-z0-9]*([:-][a-z0-9]+)*$/;

/**
 * A sanitized tree as HTML: every text and attribute value escaped (`<`, `>` and `&`, and `"` in
 * attributes), since no element left reads its content as raw text.
 */
function serialize(nodes: AnyNode[]): string {
  let out = '';
  for (const node of nodes) {
    if (node.type === 'text') out += escapeText(node.data);
    if (!isElement(node)) continue;
    const name = node.name.toLowerCase();
    if (!PLAIN_NAME.test(name)) {
      out += serialize(node.children);
      continue;
    }
    const attrs = Object.entries(node.attribs)
      .map(([k, v]) => (v === '' ? ` ${k}` : ` ${k}="${escapeAttr(v)}"`))
      .join('');
    out += VOID.has(name) ? `<${name}${attrs}>` : `<${name}${attrs}>${serialize(node.children)}</${name}>`;
  }
  return out;
}

function removeNode(node: AnyNode): void {
  const parent = node.parent;
  if (parent) parent.children.splice(parent.children.indexOf(node as never), 1);
  node.parent = null;
}

function findBody(parent: ParentNode): Element | null {
  for (const node of parent.children) {
    if (!isElement(node)) continue;
    if (node.name.toLowerCase() === 'body') return node;
    const inner = findBody(node);
    if (inner) return inner;
  }
  return null;
}

// ---- inline images ------------------------------------------------------------------------------

const CID_REF = /(["'(\s=])cid:([^"')\s>]+)/gi;
/** Inline images larger than this in total stay `cid:` references (shown as broken images) instead of bloating every read. */
export const INLINE_IMAGES_MAX = 4 << 20;

/**
 * The Content-ID a `cid:` reference names (RFC 2392: URL-encoded). A sender's malformed escape
 * ("cid:%zz") is taken as written: the message must still open.
 */
function cidOf(ref: string): string {
  try {
    return decodeURIComponent(ref);
  } catch {
    return ref;
  }
}

/** The `cid:` references of an HTML body (Content-IDs without angle brackets). */
export function cidsOf(html: string): string[] {
  const out = new Set<string>();
  for (const m of html.matchAll(CID_REF)) out.add(cidOf(m[2]!));
  return [...out];
}

/**
 * Image types an inline part may be shown as. The type goes into a `data:` URL inside an
 * attribute, so it is one of these exact names or the part stays a `cid:` reference (a broken
 * image): a sender's Content-Type could otherwise close the attribute and add markup.
 */
const INLINE_IMAGE_TYPE = /^image\/(png|jpeg|gif|webp|bmp)$/i;

/** `data:` URLs of the inline images among `parts` that `cids` name, by Content-ID (up to INLINE_IMAGES_MAX in total). */
export function inlineImageUrls(cids: string[], parts: Attachment[]): Map<string, string> {
  const byCid = new Map<string, Attachment>();
  for (const a of parts) if (a.cid && INLINE_IMAGE_TYPE.test(a.contentType)) byCid.set(a.cid.toLowerCase(), a);
  let budget = INLINE_IMAGES_MAX;
  const urls = new Map<string, string>();
  for (const cid of cids) {
    const a = byCid.get(cid.toLowerCase());
    if (!a || a.content.length > budget) continue;
    budget -= a.content.length;
    urls.set(cid, `data:${a.contentType.toLowerCase()};base64,${a.content.toString('base64')}`);
  }
  return urls;
}

/** `cid:` references replaced by `data:` URLs of the message's inline images. */
export function inlineImages(html: string, parts: Attachment[]): string {
  const urls = new Map([...inlineImageUrls(cidsOf(html), parts)].map(([k, v]) => [k.toLowerCase(), v]));
  if (!urls.size) return html;
  return html.replace(CID_REF, (all, lead: string, cid: string) => {
    const url = urls.get(cidOf(cid).toLowerCase());
    return url ? lead + url : all;
  });
}

// ---- quoting ------------------------------------------------------------------------------------

export interface QuoteSource {
  from: { name: string | null; email: string } | null;
  to: { name: string | null; email: string }[];
  cc: { name: string | null; email: string }[];
  subject: string;
  /** ISO date of the message. */
  date: string;
  text: string | null;
  html: string | null;
}

export interface Quote {
  subject: string;
  /** Plain text: `> ` lines for a reply; the forwarded-message header and the whole text for a forward. */
  text: string;
  /** HTML: the sanitized original in a blockquote (reply) or below the forwarded-message header. */
  html: string;
}

const person = (p: { name: string | null; email: string }) => (p.name ? `${p.name} <${p.email}>` : p.email);
// Made with the first quote: a date format pulls about 7 MB of ICU's locale data into memory.
let dateFmt: Intl.DateTimeFormat | undefined;
const formatDate = (d: Date) =>
  (dateFmt ??= new Intl.DateTimeFormat('en-US', { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' })).format(d);

/** Quote lines as mail clients write them: `> ` before text, `>` before an empty line, `>>` nesting kept tight. */
export function quoteLines(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(/\s+$/, '')
    .split('\n')
    .map((l) => (l === '' ? '>' : l.startsWith('>') ? `>${l}` : `> ${l}`))
    .join('\n');
}

/** What the compose window starts with when replying to or forwarding `m`: its whole body, quoted. */
export function quote(m: QuoteSource, mode: 'reply' | 'forward'): Quote {
  const prefix = mode === 'forward' ? 'Fwd:' : 'Re:';
  const subject = new RegExp(`^\\s*${prefix}`, 'i').test(m.subject) ? m.subject : `${prefix} ${m.subject}`;
  const text = m.text ?? (m.html ? htmlToText(m.html) : '');
  const safeHtml = m.html ? sanitizeHtml(m.html) : `<pre>${escapeHtml(text)}</pre>`;
  const date = Number.isNaN(Date.parse(m.date)) ? m.date : formatDate(new Date(m.date));
  if (mode === 'reply') {
    const header = `On ${date}, ${m.from ? person(m.from) : 'someone'} wrote:`;
    return {
      subject,
      text: `\n\n${header}\n${quoteLines(text)}\n`,
      html: `<p><br></p><p>${escapeHtml(header)}</p><blockquote type="cite">${safeHtml}</blockquote>`,
    };
  }
  const fields: [string, string][] = [
    ['From', m.from ? person(m.from) : ''],
    ['Date', date],
    ['Subject', m.subject],
    ['To', m.to.map(person).join(', ')],
  ];
  if (m.cc.length) fields.push(['Cc', m.cc.map(person).join(', ')]);
  const headText = ['---------- Forwarded message ----------', ...fields.map(([k, v]) => `${k}: ${v}`)].join('\n');
  const headHtml = ['---------- Forwarded message ----------', ...fields.map(([k, v]) => `${k}: ${escapeHtml(v)}`)].map((l, i) => (i === 0 ? escapeHtml(l) : l)).join('<br>');
  return {
    subject,
    text: `\n\n${headText}\n\n${text}\n`,
    html: `<p><br></p><div class="forwarded">${headHtml}<br><br>${safeHtml}</div>`,
  };
}

// ---- what the mailbox UI reads and quotes --------------------------------------------------------

/** A body is the text in a lone `pre` (see wrapText) when the message has no HTML part. */
export const realHtml = (m: { textBody: string | null; htmlBody: string | null }) => (m.htmlBody !== null && (m.textBody === null || m.htmlBody !== wrapText(m.textBody)) ? m.htmlBody : null);

/** The message as the reading pane shows it: `cid:` images of its HTML as `data:` URLs. */
export async function withInlineImages<M extends { textBody: string | null; htmlBody: string | null }>(m: M, raw: Buffer | undefined): Promise<M> {
  const html = realHtml(m);
  if (!html || !raw || !cidsOf(html).length) return m;
  return { ...m, htmlBody: inlineImages(html, await messageParts(raw)) };
}

export interface ComposeQuote extends Quote {
  /** The original has an HTML body: reply in rich text. */
  rich: boolean;
  /** `data:` URLs of the inline images the quoted HTML refers to, by Content-ID: the compose window shows them, and sends `cid:` back. */
  images: Record<string, string>;
  /** The original's parts (index as in `attachments`), for forwarding them (`attachFrom`). */
  parts: { index: number; name: string; mimeType: string; size: number; inline: boolean }[];
}

/**
 * What the compose window starts from: the original quoted for a reply or a forward, or (`edit`,
 * a reopened draft) the message itself, its HTML sanitized the same way, since it comes from the
 * mailbox and goes into the app's own window.
 */
export async function composeQuote(m: Omit<QuoteSource, 'text' | 'html'> & { textBody: string | null; htmlBody: string | null }, raw: Buffer | undefined, mode: 'reply' | 'forward' | 'edit'): Promise<ComposeQuote> {
  const html = realHtml(m);
  const text = m.textBody ?? (html ? htmlToText(html) : '');
  const q = mode === 'edit' ? { subject: m.subject, text, html: html ? sanitizeHtml(html) : `<pre>${escapeHtml(text)}</pre>` } : quote({ ...m, text: m.textBody, html }, mode);
  const parts = raw ? await messageParts(raw) : [];
  return {
    ...q,
    rich: html !== null,
    images: Object.fromEntries(inlineImageUrls(cidsOf(q.html), parts)),
    parts: parts.map((a, index) => ({ index, name: a.filename ?? `attachment-${index + 1}`, mimeType: a.contentType, size: a.size ?? a.content.length, inline: !!a.related || (!!a.cid && a.contentDisposition === 'inline') })),
  };
}
