/**
 * Message HTML is untrusted. It is shown in an iframe with `sandbox=""` (no scripts, no
 * same-origin, no forms, no popups) from `srcdoc`, behind its own CSP meta, which comes first
 * in the document. This module only prepares that document: it parses the HTML inertly
 * (DOMParser runs nothing and loads nothing), drops what can never be wanted (scripts, event
 * handlers, meta/base/link, frames, objects) as a second line of defence, finds remote
 * references (images, srcset, background, CSS url()), and while remote content is blocked
 * rewrites them away so that nothing is even attempted. The CSP and the sandbox stay the
 * real guard: they hold even where this pass missed something.
 */

/**
 * The message frame's sandbox: nothing but popups, and popups not sandboxed themselves, so that a
 * link (always target=_blank, rel=noopener noreferrer) opens as an ordinary page in a new tab,
 * never inside the frame; the desktop app asks before handing it to the system browser.
 */
export const FRAME_SANDBOX = 'allow-popups allow-popups-to-escape-sandbox';

export const BLOCKED_CSP = "default-src 'none'; img-src data: cid:; style-src 'unsafe-inline'";
/** Allowed for this message or sender: remote images (and CSS images) only, still no scripts, fonts, frames or fetches. */
export const ALLOWED_CSP = "default-src 'none'; img-src data: cid: http: https:; style-src 'unsafe-inline'";

const DROP = 'script, noscript, meta, base, link, iframe, frame, frameset, object, embed, applet, form, template, portal';
const REMOTE = /^\s*(https?:)?\/\//i;
const CSS_REMOTE_URL = /url\(\s*(['"]?)\s*(?:https?:)?\/\/[^)]*\)/gi;
/** CSS_REMOTE_URL as a test, without the state a global pattern keeps between calls. */
const HAS_CSS_REMOTE_URL = new RegExp(CSS_REMOTE_URL.source, 'i');
/** image-set() takes bare strings as URLs too (one level of url() inside it). */
const CSS_IMAGE_SET = /(?:-webkit-)?image-set\((?:[^()]|\([^()]*\))*\)/gi;
const CSS_QUOTED_REMOTE = /(['"])\s*(?:https?:)?\/\//i;
/** SVG elements whose href loads an image or a document. */
const SVG_LOADS = new Set(['image', 'feimage', 'use']);
const CSS_IMPORT = /@import[^;]*;?/gi;

export interface PreparedHtml {
  srcdoc: string;
  /** The message references remote content (blocked unless allowed). */
  hasRemote: boolean;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export function prepareHtml(html: string, allowRemote: boolean): PreparedHtml {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  let hasRemote = false;
  doc.querySelectorAll(DROP).forEach((el) => el.remove());
  for (const el of Array.from(doc.querySelectorAll('*'))) {
    for (const attr of Array.from(el.attributes)) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on') || name === 'formaction' || name === 'ping') {
        el.removeAttribute(attr.name);
        continue;
      }
      if (name === 'href' || name === 'xlink:href') {
        if (/^\s*(javascript|data|vbscript|file|blob):/i.test(attr.value)) el.removeAttribute(attr.name);
        else if (SVG_LOADS.has(el.localName.toLowerCase()) && REMOTE.test(attr.value)) {
          hasRemote = true;
          if (!allowRemote) el.removeAttribute(attr.name);
        }
        continue;
      }
      if (name === 'target' || name === 'rel') {
        el.removeAttribute(attr.name);
        continue;
      }
      if (['src', 'srcset', 'background', 'poster', 'lowsrc', 'dynsrc', 'data'].includes(name)) {
        const remote = name === 'srcset' ? /(^|,)\s*(https?:)?\/\//i.test(attr.value) : REMOTE.test(attr.value);
        if (!remote) continue;
        hasRemote = true;
        if (!allowRemote) el.removeAttribute(attr.name);
      } else if (name === 'style') {
        if (remoteCss(attr.value) || /@import/i.test(attr.value)) {
          hasRemote = true;
          if (!allowRemote) el.setAttribute('style', withoutRemoteCss(attr.value).replace(CSS_IMPORT, ''));
        }
      }
    }
  }
  for (const style of Array.from(doc.querySelectorAll('style'))) {
    const css = style.textContent ?? '';
    // @import would pull remote style sheets: never wanted (style-src has no remote source either).
    // Replaced by a space, not deleted: deleting could join the text around it into markup
    // ("</sty@import;le>" would become "</style>", and a style element's text is written out as is).
    let next = css.replace(CSS_IMPORT, ' ');
    if (remoteCss(next)) {
      hasRemote = true;
      if (!allowRemote) next = withoutRemoteCss(next);
    }
    // The parser ended the element at any "</style" its text had; one here was made by the edits above.
    if (/<\/style/i.test(next)) next = '';
    if (next !== css) style.textContent = next;
  }
  // Links never navigate the frame: each opens a new tab, without a handle on this window.
  for (const a of Array.from(doc.querySelectorAll('a[href], area[href]'))) {
    // A link to a place in the message itself only scrolls the frame.
    const inPage = (a.getAttribute('href') ?? '').trim().startsWith('#');
    a.setAttribute('target', inPage ? '_self' : '_blank');
    if (!inPage) a.setAttribute('rel', 'noopener noreferrer');
  }
  const csp = allowRemote ? ALLOWED_CSP : BLOCKED_CSP;
  // Our head first: the CSP meta precedes every byte of the message, and links never leave the frame's sandbox.
  const head =
    `<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${escapeAttr(csp)}">` +
    '<meta name="referrer" content="no-referrer"><base target="_blank">' +
    '<style>html{color-scheme:light}body{margin:12px 16px;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:#1d2430;background:#fff;overflow-wrap:anywhere}img{max-width:100%;height:auto}pre{white-space:pre-wrap}blockquote{margin:0 0 0 4px;padding-left:10px;border-left:3px solid #dfe3e8;color:#555}</style>';
  const bodyStyles = Array.from(doc.head.querySelectorAll('style'))
    .map((s) => s.outerHTML)
    .join('');
  return { srcdoc: `<!doctype html><html><head>${head}${bodyStyles}</head><body>${doc.body.innerHTML}</body></html>`, hasRemote };
}

/** Whether CSS text loads something remote: a url(), or a string in image-set(). */
function remoteCss(css: string): boolean {
  return HAS_CSS_REMOTE_URL.test(css) || (css.match(CSS_IMAGE_SET) ?? []).some((set) => CSS_QUOTED_REMOTE.test(set));
}

/** CSS text with every remote image-set() and url() replaced by `none`. */
function withoutRemoteCss(css: string): string {
  return css.replace(CSS_IMAGE_SET, (set) => (CSS_QUOTED_REMOTE.test(set) || HAS_CSS_REMOTE_URL.test(set) ? 'none' : set)).replace(CSS_REMOTE_URL, 'none');
}

/** Plain text as a safe document (no HTML part). */
export function textToHtml(text: string): string {
  const esc = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `<pre>${esc}</pre>`;
}

const SENDERS_KEY = 'tributary.mail.remoteSenders';

/** Senders whose remote images are always shown (this profile's local storage). */
export function trustedSenders(): Set<string> {
  try {
    const list = JSON.parse(localStorage.getItem(SENDERS_KEY) ?? '[]') as unknown;
    return new Set(Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : []);
  } catch {
    return new Set();
  }
}

export function trustSender(email: string): void {
  const set = trustedSenders();
  set.add(email.toLowerCase());
  localStorage.setItem(SENDERS_KEY, JSON.stringify([...set]));
}
