/**
 * Replying to and forwarding a whole message, against a real Dovecot (IMAP + LMTP) and a real
 * Postfix delivering to it (notes/test-servers.md §1, §2A): the HTML-only invoice whose table
 * cells must not run together when quoted as text, its inline (cid:) logo mapped when reading and
 * kept when forwarding, its PDF forwarded byte for byte; drafts that carry those parts across
 * saves; times from the Date header. Spec 2, "Send" (`reply_to`), "Retrieve a message".
 */
import { rmSync } from 'node:fs';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import type { MailMessage } from '../../src-main/contract/mail';
import { htmlToText, quote, sanitizeHtml } from '../../src-main/mail/body';
import { mailHandlers, type MailHandlers } from '../../src-main/rpc/mail';
import { startDovecot, type DovecotServer } from '../servers/dovecot';
import { startPostfix, type PostfixServer } from '../servers/postfix';
import { scratchDir } from '../servers/util';

// A 1×1 PNG.
const LOGO = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n% invoice 42\n%%EOF\n');
const TAIL = 'Payment is due within thirty days of the invoice date; late payments incur a fee of two percent per month.';
const INVOICE_HTML =
  '<html><head><style>td{padding:4px}</style><script>steal()</script></head><body onload="steal()">' +
  '<p><img src="cid:logo@billing.example.test" alt="Billing Co"></p><p>Dear customer, here is your invoice for the period from January to December.</p>' +
  '<table><tr><th>Item</th><th>Amount</th></tr><tr><td>Storage plan (12 months)</td><td>€1,200.00</td></tr><tr><td>Support</td><td>€300.00</td></tr></table>' +
  `<p><a href="https://billing.example.test/pay" onclick="steal()">Pay online</a> <img src="https://tracker.example.test/open.gif"></p><p>${TAIL}</p></body></html>`;
const SENT_AT = new Date(Date.UTC(2026, 2, 14, 9, 30));

const all = { after: '1970-01-01T00:00:00Z', before: '2100-01-01T00:00:00Z' };
const waitUntil = async <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> => {
  for (let i = 0; i < 200; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within 20 s`);
};

describe('reply and forward carry the whole message (spec 2, Send; Retrieve a message)', () => {
  let dovecot: DovecotServer;
  let postfix: PostfixServer;
  let app: App;
  let h: MailHandlers;
  let alice: number;
  let bob: number;
  let dataDir: string;
  let invoice: MailMessage;

  beforeAll(async () => {
    dovecot = await startDovecot();
    postfix = await startPostfix({ lmtpPort: dovecot.lmtpPort });
    dataDir = scratchDir('reply-forward');
    app = await createApp({ dataDir, defaultLocalFolder: false, mail: { live: false } });
    h = mailHandlers(app.mail, app.storage, app.settings);
    const options = (user: string) => ({ host: dovecot.host, port: dovecot.imapPort, tls: 'none', user, password: 'secret', email: `${user}@example.test`, smtp_host: postfix.host, smtp_port: postfix.port, smtp_tls: 'none' });
    alice = (await app.accounts.connect({ service: 'imap', options: options('alice') })).id;
    bob = (await app.accounts.connect({ service: 'imap', options: options('bob') })).id;
    const raw = await new MailComposer({
      from: 'Billing Co <billing@example.test>',
      to: 'alice@example.test',
      subject: 'Invoice 42',
      html: INVOICE_HTML,
      date: SENT_AT,
      messageId: '<invoice-42@billing.example.test>',
      attachments: [
        { filename: 'logo.png', content: LOGO, contentType: 'image/png', cid: 'logo@billing.example.test' },
        { filename: 'invoice-42.pdf', content: PDF, contentType: 'application/pdf' },
      ],
    })
      .compile()
      .build();
    await dovecot.deliver(raw, ['alice']);
    await app.mail.sync(alice);
    const page = await app.mail.messages.list(alice, { ...all, bodies: false });
    invoice = page.objects.find((m) => m.subject === 'Invoice 42')!;
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await postfix?.stop();
    await dovecot?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('the time of a message is its Date header, not its arrival (document 2, message `created`)', () => {
    expect(invoice.created).toBe(SENT_AT.toISOString());
  });

  it('HTML to text keeps table cells apart and rows on their own lines (the invoice case)', () => {
    const text = htmlToText(INVOICE_HTML);
    expect(text).toContain('Item\tAmount\nStorage plan (12 months)\t€1,200.00\nSupport\t€300.00');
    expect(text).not.toContain('steal');
    expect(text).toContain('Pay online <https://billing.example.test/pay>');
  });

  it('a reply quotes the whole body: `> ` lines in text, the sanitized HTML in a blockquote', async () => {
    const q = await h['mail.quote']({ account: alice, id: invoice.id, mode: 'reply' });
    expect(q.subject).toBe('Re: Invoice 42');
    expect(q.text).toMatch(/On .+, Billing Co <billing@example\.test> wrote:\n/);
    expect(q.text).toContain('> Storage plan (12 months)\t€1,200.00\n> Support\t€300.00');
    // The whole message, not a 200-character preview.
    expect(q.text).toContain(`> ${TAIL}`);
    expect(q.html).toMatch(/<blockquote type="cite">[\s\S]*<td>Storage plan \(12 months\)<\/td><td>€1,200.00<\/td>[\s\S]*<\/blockquote>$/);
    expect(q.html).toContain(TAIL);
    // Nothing that runs, loads remotely or styles the window around the quote.
    for (const bad of ['<script', 'onload', 'onclick', 'steal', '<style', 'tracker.example.test']) expect(q.html).not.toContain(bad);
    expect(q.html).toContain('href="https://billing.example.test/pay"');
    // The inline logo: referenced as cid:, shown from a data: URL.
    expect(q.html).toContain('src="cid:logo@billing.example.test"');
    expect(q.images['logo@billing.example.test']).toBe(`data:image/png;base64,${LOGO.toString('base64')}`);
    expect(q.parts.map((p) => [p.name, p.inline])).toEqual([
      ['logo.png', true],
      ['invoice-42.pdf', false],
    ]);
  });

  it('reading maps cid: images to data: URLs (the reading pane cannot resolve cid:)', async () => {
    const m = await h['mail.get']({ account: alice, id: invoice.id });
    expect(m.htmlBody).toContain(`src="data:image/png;base64,${LOGO.toString('base64')}"`);
    expect(m.htmlBody).not.toContain('cid:logo');
    // The preview line is the words: no image text, no link targets.
    expect(m.snippet).toMatch(/^Dear customer, here is your invoice for the period from January to December\. Item Amount Storage plan/);
    // Marking it read answers the same message the reading pane shows (it replaces the cached one).
    expect((await h['mail.setFlags']({ account: alice, id: invoice.id, seen: true })).htmlBody).toContain('src="data:image/png;base64,');
    // The REST message keeps the message's own HTML.
    expect((await app.mail.messages.get(alice, invoice.id)).htmlBody).toContain('cid:logo@billing.example.test');
  });

  it('a forward has the forwarded-message header and the whole text, and keeps the attachments and the inline logo (through Postfix)', async () => {
    const q = await h['mail.quote']({ account: alice, id: invoice.id, mode: 'forward' });
    expect(q.subject).toBe('Fwd: Invoice 42');
    expect(q.text).toMatch(/---------- Forwarded message ----------\nFrom: Billing Co <billing@example\.test>\nDate: .+2026.+\nSubject: Invoice 42\nTo: alice@example\.test\n\n/);
    expect(q.text).toContain('Storage plan (12 months)\t€1,200.00');
    await h['mail.send']({ account: alice, to: [{ name: null, email: 'bob@example.test' }], subject: q.subject, textBody: `FYI\n${q.text}`, htmlBody: `<p>FYI</p>${q.html}`, attachFrom: { id: invoice.id } });
    const got = await waitUntil('the forward in bob’s inbox', async () => {
      await app.mail.sync(bob);
      const page = await app.mail.messages.list(bob, { ...all, bodies: false });
      return page.objects.find((m) => m.subject === 'Fwd: Invoice 42');
    });
    const rfc822 = (await app.mail.messages.get(bob, got.id)).rfc822!;
    const { stream } = await app.mail.messages.openFile(bob, rfc822.id);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    const parsed = await simpleParser(Buffer.concat(chunks), { skipImageLinks: true });
    const pdf = parsed.attachments.find((a) => a.filename === 'invoice-42.pdf');
    const logo = parsed.attachments.find((a) => a.filename === 'logo.png');
    expect(pdf?.content.equals(PDF)).toBe(true);
    expect(logo?.content.equals(LOGO)).toBe(true);
    expect(logo?.cid).toBe('logo@billing.example.test');
    expect(parsed.html).toContain('src="cid:logo@billing.example.test"');
    // The UI sends the HTML (spec 2: text_body is ignored when body is given).
    expect(parsed.html).toContain('Subject: Invoice 42');
    expect(parsed.html).toContain('<td>Storage plan (12 months)</td>');
    // Bob reads it with the logo shown.
    expect((await h['mail.get']({ account: bob, id: got.id })).htmlBody).toContain('data:image/png;base64,');
  });

  it('a draft carrying the original’s parts is replaced, not duplicated, and keeps them across saves (mail.saveDraft `replaces`, `attachFrom`)', async () => {
    const first = await h['mail.saveDraft']({ account: alice, subject: 'Fwd: Invoice 42', textBody: 'draft one', attachFrom: { id: invoice.id, parts: [1] } });
    expect(first.attachments?.map((a) => a.name)).toEqual(['invoice-42.pdf']);
    // A reopened draft is saved again from its own parts, replacing itself.
    const second = await h['mail.saveDraft']({ account: alice, subject: 'Fwd: Invoice 42', textBody: 'draft two', attachFrom: { id: first.id }, replaces: first.id });
    const drafts = await app.mail.messages.list(alice, { ...all, folder_id: second.folderId });
    expect(drafts.objects.map((m) => [m.subject, m.textBody?.trim(), m.attachments?.map((a) => a.name)])).toEqual([['Fwd: Invoice 42', 'draft two', ['invoice-42.pdf']]]);
  });

  it('a reopened draft is edited from its own body, sanitized like a quote, with its parts (mail.quote `edit`)', async () => {
    const saved = await h['mail.saveDraft']({
      account: alice,
      subject: 'Edit me',
      htmlBody: '<p>Draft <b>text</b></p><img src="https://tracker.example.test/d.gif"><style>body{display:none}</style><img src="cid:logo@billing.example.test">',
      attachFrom: { id: invoice.id },
    });
    const q = await h['mail.quote']({ account: alice, id: saved.id, mode: 'edit' });
    expect(q.subject).toBe('Edit me');
    expect(q.rich).toBe(true);
    expect(q.html).toBe('<p>Draft <b>text</b></p><img src="cid:logo@billing.example.test">');
    expect(q.images['logo@billing.example.test']).toMatch(/^data:image\/png;base64,/);
    expect(q.parts.map((p) => [p.name, p.inline])).toEqual([
      ['logo.png', true],
      ['invoice-42.pdf', false],
    ]);
    await h['mail.delete']({ account: alice, id: saved.id });
  });

  it('hostile nesting (100,000 open elements) is read as its words, not parsed into a tree (htmlToText, sanitizeHtml)', () => {
    const deep = '<div>'.repeat(100_000) + 'deep &amp; down' + '</div>'.repeat(100_000);
    expect(htmlToText(deep)).toBe('deep & down');
    expect(sanitizeHtml(deep)).toBe('<pre>deep &amp; down</pre>');
    // Ordinary nesting keeps its layout.
    expect(htmlToText(`${'<div>'.repeat(50)}<table><tr><td>a</td><td>b</td></tr></table>${'</div>'.repeat(50)}`)).toBe('a\tb');
  });

  it('quote() of a plain-text message: `>` before empty lines, nested quotes kept tight', () => {
    const q = quote({ from: { name: null, email: 'a@example.test' }, to: [], cc: [], subject: 'Re: x', date: SENT_AT.toISOString(), text: 'Yes.\n\n> earlier\nend', html: null }, 'reply');
    expect(q.subject).toBe('Re: x');
    expect(q.text.endsWith('> Yes.\n>\n>> earlier\n> end\n')).toBe(true);
    expect(sanitizeHtml('<a href="javascript:alert(1)">x</a><img src="http://t.test/p.gif"><div style="position:fixed">y</div>')).toBe('<a>x</a><div>y</div>');
  });

  it('sanitizeHtml keeps no way to load: CSS by allowlist, raw-text elements dropped with their content, text and attributes escaped (docs/ui.md, Replies and forwards)', () => {
    const T = 'https://tracker.example.test';
    const hostile = [
      `<div style="background-image:image-set('${T}/a.gif' 1x);color:red">x</div>`,
      `<div style="background:u\\rl(${T}/b.gif)">x</div>`,
      `<div style="background:&#117;rl(${T}/c.gif)">x</div>`,
      `<div style="list-style-image:url(${T}/d.gif);cursor:url(${T}/e.cur),auto">x</div>`,
      `<div style="color:red;@import '${T}/f.css'">x</div>`,
      `<div style="font-family:'a;background:url(${T}/g.gif)'">x</div>`,
      `<div style="width:expression(alert(1))">x</div>`,
      ...['noframes', 'noembed', 'xmp', 'noscript', 'iframe', 'textarea', 'title', 'template', 'style'].map((e) => `<p>hi</p><${e}><p title="</${e}><img src=${T}/${e}.gif><style>body{background:url(${T}/${e}.css)}</style>"></p></${e}>`),
      `<p>hi</p><plaintext><img src=${T}/plaintext.gif>`,
      `<iframe srcdoc="<img src=${T}/srcdoc.gif>"></iframe>`,
      `<svg><style><img src=${T}/svg.gif></style></svg><math><style><img src=${T}/math.gif></style></math>`,
    ];
    for (const html of hostile) {
      const out = sanitizeHtml(html);
      expect(out, html).not.toMatch(/https?:|tracker|<style|<img|<(noframes|noembed|xmp|noscript|iframe|textarea|title|template|plaintext|svg|math)\b/i);
      expect(sanitizeHtml(out), html).toBe(out);
    }
    expect(sanitizeHtml(hostile[0]!)).toBe('<div style="color: red">x</div>');
    // What the parser read as text stays text in the window.
    expect(sanitizeHtml('<p title="a</p><b>c">x &lt;y&gt; &amp; z</p>')).toBe('<p title="a&lt;/p&gt;&lt;b&gt;c">x &lt;y&gt; &amp; z</p>');
    // Ordinary formatting is kept.
    expect(sanitizeHtml('<td style="font-family: \'Segoe UI\', Arial; color: rgb(10, 20, 30); padding: 4px 8px !important">a</td>')).toBe(
      '<td style="font-family: \'Segoe UI\', Arial; color: rgb(10, 20, 30); padding: 4px 8px !important">a</td>',
    );
  });

  it('an inline part whose Content-Type is not a plain image type stays a cid: reference: it cannot add markup (mail.get, mail.quote)', async () => {
    const raw = [
      'From: Odd Sender <odd@example.test>',
      'To: alice@example.test',
      'Subject: Odd image type',
      'Message-ID: <odd-type@example.test>',
      'MIME-Version: 1.0',
      'Content-Type: multipart/related; boundary="B"',
      '',
      '--B',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Logo <img src="cid:odd@example.test"></p>',
      '--B',
      'Content-Type: "image/png\\"><img src=x onerror=alert(1)>"',
      'Content-ID: <odd@example.test>',
      'Content-Transfer-Encoding: base64',
      '',
      LOGO.toString('base64'),
      '--B--',
      '',
    ].join('\r\n');
    await dovecot.deliver(Buffer.from(raw), ['alice']);
    await app.mail.sync(alice);
    const odd = (await app.mail.messages.list(alice, { ...all, bodies: false })).objects.find((m) => m.subject === 'Odd image type')!;
    const m = await h['mail.get']({ account: alice, id: odd.id });
    expect(m.htmlBody).toBe('<p>Logo <img src="cid:odd@example.test"></p>');
    const q = await h['mail.quote']({ account: alice, id: odd.id, mode: 'reply' });
    expect(q.images).toEqual({});
    // What the compose window puts in its editor (Compose.tsx): the quote with cid: mapped.
    const editor = Object.entries(q.images).reduce((html, [cid, url]) => html.split(`cid:${cid}`).join(url), q.html);
    expect(editor).not.toMatch(/onerror|src=x/);
  });

  it('an HTML-only message nested 5,000 deep opens, has a preview line and is found by its words (mail.get, mail.search; spec 2, Retrieve a message)', async () => {
    const html = `${'<div>'.repeat(5000)}Marmalade quokka ledger${'</div>'.repeat(5000)}`;
    const raw = ['From: Deep Sender <deep@example.test>', 'To: alice@example.test', 'Subject: Deep HTML', 'Message-ID: <deep-html@example.test>', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8', '', html, ''].join('\r\n');
    await dovecot.deliver(Buffer.from(raw), ['alice']);
    await app.mail.sync(alice);
    const deep = (await app.mail.messages.list(alice, { ...all, bodies: false })).objects.find((m) => m.subject === 'Deep HTML')!;
    const m = await h['mail.get']({ account: alice, id: deep.id });
    expect(m.textBody).toBe('Marmalade quokka ledger');
    expect(m.snippet).toBe('Marmalade quokka ledger');
    const found = await h['mail.search']({ account: alice, q: 'quokka' });
    expect(found.objects.map((x) => x.subject)).toEqual(['Deep HTML']);
  });

  it('a cid: reference with a malformed escape is left as written; the message still opens and quotes', async () => {
    const raw = await new MailComposer({
      from: 'Odd Sender <odd@example.test>',
      to: 'alice@example.test',
      subject: 'Odd cid',
      html: '<p>Logo <img src="cid:%zz"> and <img src="cid:logo@odd.example.test"></p>',
      attachments: [{ filename: 'logo.png', content: LOGO, contentType: 'image/png', cid: 'logo@odd.example.test' }],
    })
      .compile()
      .build();
    await dovecot.deliver(raw, ['alice']);
    await app.mail.sync(alice);
    const odd = (await app.mail.messages.list(alice, { ...all, bodies: false })).objects.find((m) => m.subject === 'Odd cid')!;
    const m = await h['mail.get']({ account: alice, id: odd.id });
    expect(m.htmlBody).toContain(`src="data:image/png;base64,${LOGO.toString('base64')}"`);
    expect(m.htmlBody).toContain('cid:%zz');
    const q = await h['mail.quote']({ account: alice, id: odd.id, mode: 'reply' });
    expect(q.images['logo@odd.example.test']).toBe(`data:image/png;base64,${LOGO.toString('base64')}`);
  });
});
