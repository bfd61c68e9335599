/**
 * Mail HTML as Chromium parses it (docs/ui.md, "Message HTML" and "Replies and forwards carry
 * the whole message"): the quote the compose window puts into its editor with innerHTML, and the
 * document the reading pane puts into its frame, hold no element the checks in
 * src-main/mail/body.ts and safeHtml.ts took out, and nothing is requested. Every request
 * the page makes is recorded and refused.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { transformWithOxc } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quote } from '../../src-main/mail/body';

const CHROMIUM = '/usr/bin/chromium';
const T = 'https://tracker.example.test';

describe.skipIf(!existsSync(CHROMIUM))('mail HTML parsed by Chromium (docs/ui.md, Message HTML)', () => {
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    page = await browser.newPage();
    await page.route('**/*', (r) => {
      requests.push(r.request().url());
      return r.abort();
    });
    await page.setContent('<!doctype html><html><body><div id="editor" contenteditable></div></body></html>');
    // The reading pane's module, as the renderer runs it.
    const src = readFileSync('src-renderer/src/features/mailbox/safeHtml.ts', 'utf8');
    const js = (await transformWithOxc(src, 'safeHtml.ts', { lang: 'ts' })).code.replace(/^export /gm, '');
    await page.addScriptTag({ content: `${js}\nwindow.prepareHtml = prepareHtml;` });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('a quoted message in the compose editor: no image, style or raw-text element, no remote reference, no request (mail.quote)', async () => {
    const hostile = [
      `<p>hello</p><noframes><p title="</noframes><img src=${T}/noframes.gif>"></p></noframes>`,
      `<noembed><p title="</noembed><style>body{background:url(${T}/noembed.css)}</style>"></p></noembed>`,
      `<xmp><p title="</xmp><img src=${T}/xmp.gif>"></p></xmp>`,
      `<noscript><p title="</noscript><img src=${T}/noscript.gif>"></p></noscript>`,
      `<div style="background-image:image-set('${T}/imageset.gif' 1x);width:10px;height:10px">x</div>`,
      `<div style="background:u\\rl(${T}/escape.gif);width:10px;height:10px">x</div>`,
    ].join('');
    const q = quote({ from: { name: 'X', email: 'x@example.test' }, to: [], cc: [], subject: 's', date: '2026-03-14T09:30:00Z', text: null, html: hostile }, 'reply');
    // Browser code as text: this project's types have no DOM.
    const seen = (await page.evaluate(`(async (html) => {
      const el = document.getElementById('editor');
      el.innerHTML = html;
      await new Promise((r) => setTimeout(r, 200));
      const refs = Array.from(el.querySelectorAll('*')).flatMap((e) => Array.from(e.attributes).map((a) => a.value));
      return { elements: Array.from(el.querySelectorAll('img, style, link, meta, noframes, noembed, xmp, noscript, iframe')).map((e) => e.tagName), refs, text: el.textContent };
    })(${JSON.stringify(q.html)})`)) as { elements: string[]; refs: string[]; text: string };
    expect(seen.elements).toEqual([]);
    expect(seen.refs.filter((v) => /https?:|tracker/i.test(v))).toEqual([]);
    expect(seen.text).toContain('hello');
    expect(requests).toEqual([]);
  });

  it('the reading pane: removing @import from a style element cannot close it and let markup out (prepareHtml)', async () => {
    const html =
      `<html><head><style>p{color:red}</sty@import;le><meta http-equiv="refresh" content="0;url=${T}/refresh"></style></head>` +
      `<body><p>Dear customer</p><style></sty@import;le><img src="${T}/img.gif"></style></body></html>`;
    const seen = await page.evaluate(`(() => {
      const { srcdoc } = window.prepareHtml(${JSON.stringify(html)}, false);
      const doc = new DOMParser().parseFromString(srcdoc, 'text/html');
      return {
        refresh: doc.querySelectorAll('meta[http-equiv="refresh" i]').length,
        images: doc.querySelectorAll('img').length,
        text: doc.querySelector('p')?.textContent,
      };
    })()`);
    expect(seen).toEqual({ refresh: 0, images: 0, text: 'Dear customer' });
    expect(requests).toEqual([]);
  });

  // docs/ui.md, Message HTML: while remote content is blocked the bar offers to load it; SVG
  // images and CSS image-set() strings are remote content too, so they show the bar and are taken
  // out, and are kept once the user allows them.
  it('the reading pane: SVG images and CSS image-set() strings count as remote content (prepareHtml)', async () => {
    const cases = [
      `<svg width="10" height="10"><image href="${T}/svg-href.gif" width="10" height="10"/></svg>`,
      `<svg width="10" height="10"><image xlink:href="${T}/svg-xlink.gif" width="10" height="10"/></svg>`,
      `<div style="background-image:image-set('${T}/inline-set.gif' 1x);width:10px;height:10px">x</div>`,
      `<style>div.s{background-image:-webkit-image-set("${T}/sheet-set.gif" 1x)}</style><div class="s">x</div>`,
    ];
    const seen = (await page.evaluate(`((cases) => cases.map((html) => {
      const blocked = window.prepareHtml(html, false);
      const allowed = window.prepareHtml(html, true);
      return { blocked: blocked.hasRemote, leftBlocked: blocked.srcdoc.includes('tracker.example'), keptAllowed: allowed.srcdoc.includes('tracker.example') };
    }))(${JSON.stringify(cases)})`)) as { blocked: boolean; leftBlocked: boolean; keptAllowed: boolean }[];
    expect(seen).toEqual(cases.map(() => ({ blocked: true, leftBlocked: false, keptAllowed: true })));
    // A local image-set stays as it is, and is no reason for the bar.
    const local = (await page.evaluate(`window.prepareHtml(${JSON.stringify(`<div style="background-image:image-set('cid:logo' 1x)">x</div>`)}, false)`)) as { hasRemote: boolean; srcdoc: string };
    expect(local.hasRemote).toBe(false);
    expect(local.srcdoc).toContain("image-set('cid:logo' 1x)");
    expect(requests).toEqual([]);
  });
});
