/**
 * Names that come from outside (files, folders, accounts, paths) shown as what they are. A name
 * is isolated from the text around it (`<bdi>`), so its right-to-left characters cannot reorder
 * a sentence, and the characters that would make it look like another name are shown rather
 * than obeyed: bidi controls (U+202E and friends), line breaks (⏎), other control characters
 * and invisible ones, each as its code point in a muted box. "invoice\u202Etxt.exe" reads
 * `invoice⟨U+202E⟩txt.exe`, never "invoiceexe.txt". Actions keep using the real name.
 */
import { createElement, Fragment, isValidElement, useLayoutEffect, useRef, type ReactElement, type ReactNode } from 'react';
import './name.css';

/** Characters that reorder text, break lines, or show nothing at all. */
function hidden(cp: number): boolean {
  return (
    cp <= 0x1f || // C0 controls (line feed, carriage return, tab, …)
    (cp >= 0x7f && cp <= 0x9f) || // DEL and the C1 controls (U+0085 next line among them)
    cp === 0xad || // soft hyphen
    cp === 0x61c || // Arabic letter mark
    cp === 0x180e || // Mongolian vowel separator
    cp === 0x200b || // zero width space
    cp === 0x200e ||
    cp === 0x200f || // left-to-right and right-to-left marks
    (cp >= 0x2028 && cp <= 0x202e) || // line and paragraph separators, embeddings and overrides
    (cp >= 0x2060 && cp <= 0x2064) || // word joiner and invisible operators
    (cp >= 0x2066 && cp <= 0x2069) || // isolates
    cp === 0xfeff // zero width no-break space
  );
}

const LINE_FEED = 0x0a;

/** How a hidden character is shown: ⏎ for a line feed, otherwise its code point. */
function token(cp: number): string {
  return cp === LINE_FEED ? '⏎' : `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

type Part = { text: string } | { cp: number };

function parts(name: string): Part[] {
  const out: Part[] = [];
  let text = '';
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    if (!hidden(cp)) {
      text += ch;
      continue;
    }
    if (text) out.push({ text });
    text = '';
    out.push({ cp });
  }
  if (text) out.push({ text });
  return out;
}

/** The name as plain text with its hidden characters written out: for `title`, `aria-label`, `<option>`. */
export function nameText(name: string): string {
  let out = '';
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    out += hidden(cp) ? token(cp) : ch;
  }
  return out;
}

function Shown({ text }: { text: string }) {
  return (
    <>
      {parts(text).map((p, i) =>
        'text' in p ? (
          <Fragment key={i}>{p.text}</Fragment>
        ) : (
          <span key={i} className="name-hidden" title={`U+${p.cp.toString(16).toUpperCase().padStart(4, '0')}`}>
            {token(p.cp)}
          </span>
        ),
      )}
    </>
  );
}

/** How many characters of a long stem stay at its end, beside the extension, when the middle is cut. */
const TAIL = 6;

/**
 * One untrusted name, isolated and with its hidden characters shown. `fit`: it is cut to the
 * room it has in the middle of its stem, keeping the start, the end and the extension visible
 * (a file list); otherwise it wraps wherever it must (dialogs, messages).
 */
export function Name({ value, fit, extension }: { value: string; fit?: boolean; extension?: boolean }) {
  if (fit) return <FitName value={value} extension={extension} />;
  return (
    <bdi className="name">
      <Shown text={value} />
    </bdi>
  );
}

function FitName({ value, extension }: { value: string; extension?: boolean }) {
  const chars = [...value];
  // An extension is a short ending after a dot that does not start the name (".bashrc" has none).
  const dot = extension ? chars.lastIndexOf('.') : -1;
  const hasExt = dot > 0 && chars.length - dot <= 12;
  const stem = hasExt ? chars.slice(0, dot) : chars;
  const keep = stem.length > TAIL * 2 ? TAIL : 0;
  const head = stem.slice(0, stem.length - keep).join('');
  const tail = stem.slice(stem.length - keep).join('') + (hasExt ? chars.slice(dot).join('') : '');
  const ref = useRef<HTMLElement>(null);
  // The start gives way to the end: it may take what the end leaves. Both stay inline boxes, so
  // the name reads as one piece of text (to innerText and assistive technology alike).
  useLayoutEffect(() => {
    const box = ref.current;
    const end = box?.querySelector<HTMLElement>('.name-tail');
    box?.style.setProperty('--name-tail', `${end ? end.getBoundingClientRect().width : 0}px`);
  }, [tail]);
  return (
    <bdi className="name name-fit" ref={ref}>
      <span className="name-head">
        <Shown text={head} />
      </span>
      {tail && (
        <span className="name-tail">
          <Shown text={tail} />
        </span>
      )}
    </bdi>
  );
}

/** Text that is not a name, for `named`: `named\`${plain('3 items')} moved\``. */
export function plain(text: string): ReactElement {
  return createElement(Fragment, null, text);
}

/** "1 item", "3 items" (plain text, for `named`). */
export function count(n: number, noun = 'item'): ReactElement {
  return plain(`${n.toLocaleString()} ${noun}${n === 1 ? '' : 's'}`);
}

/**
 * A message with names in it: every interpolated string is a name (shown with `Name`); numbers
 * and elements (`plain`, `count`, other `named` messages) are put in as they are.
 * named`Could not delete “${item.name}”`.
 */
export function named(strings: TemplateStringsArray, ...values: (string | number | ReactElement)[]): ReactElement {
  const children: ReactNode[] = [];
  strings.forEach((s, i) => {
    if (s) children.push(s);
    if (i >= values.length) return;
    const v = values[i];
    if (typeof v === 'string') children.push(createElement(Name, { value: v }));
    else if (typeof v === 'number') children.push(v.toLocaleString());
    else if (isValidElement(v)) children.push(v);
  });
  return createElement(Fragment, null, ...children);
}
