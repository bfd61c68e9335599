/** A message's bodies as Tributary reads them: parsed once from the source, then cached. */
import type { AttachmentMeta } from './store';

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A text-only body shown as HTML: preformatted, every character literal. */
export const wrapText = (text: string) => `<pre>${escapeHtml(text)}</pre>`;

function snippetOf(text: string | null, html: string | null): string {
  const src = text ?? (html ? html.replace(/<(style|script)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ').replace(/&nbsp;/g, ' ') : '');
  return src.replace(/\s+/g, ' ').trim().slice(0, 200);
}

export async function parseBody(raw: Buffer): Promise<{ text: string | null; html: string | null; attachments: AttachmentMeta[]; snippet: string }> {
  const { simpleParser } = await import('mailparser'); // loaded with the first message parsed
  const p = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  const text = p.text ?? null;
  const html = typeof p.html === 'string' ? p.html : null;
  return {
    text,
    html,
    attachments: p.attachments.map((a, i) => ({ name: a.filename ?? `attachment-${i + 1}`, mimeType: a.contentType, size: a.size ?? a.content.length })),
    snippet: snippetOf(text, html),
  };
}
