/**
 * The web UI installs as an app (docs/ui.md, "Install the web UI as an app"), in Debian's
 * Chromium against headless mode: the page links a web app manifest that the local server
 * serves as application/manifest+json without the UI token, every icon it names answers 200
 * with an image of the stated size, the favicon and apple-touch-icon load, the CSP admits the
 * manifest, and Chromium reports the page installable and installs it. The installed app's
 * start URL carries no token, so running as the installed app keeps the token for its later
 * launches, and a rotation replaces the kept one.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, launchChromiumProfile, startServe, stopChild } from './harness';

const dirs = ['data', 'local', 'profile'].map((d) => mkdtempSync(join(tmpdir(), `tributary-e2e-installable-${d}-`)));
let serve: { child: ChildProcess; url: string };
let browser: BrowserContext;
let page: Page;
let origin: string;
let cdp: CDPSession;

interface ManifestIcon {
  src: string;
  sizes: string;
  type: string;
  purpose?: string;
}

beforeAll(async () => {
  ensureBuilt();
  serve = await startServe(dirs[0], dirs[1]);
  browser = await launchChromiumProfile(dirs[2]);
  page = await browser.newPage();
  await page.goto(serve.url);
  await page.getByTestId('file-list').waitFor();
  origin = new URL(serve.url).origin;
  cdp = await browser.newCDPSession(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (serve) await stopChild(serve.child);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Decodes an image answer; asserts it is one. */
async function imageAt(url: string): Promise<{ width: number; height: number; format: string; type: string | null }> {
  const res = await fetch(url);
  expect(res.status, url).toBe(200);
  const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  return { width: m.width!, height: m.height!, format: m.format!, type: res.headers.get('content-type') };
}

describe('installable web UI', () => {
  it('serves the manifest the page links, without the UI token, as application/manifest+json', async () => {
    const href = await page.locator('link[rel=manifest]').getAttribute('href');
    const url = new URL(href!, page.url()).href;
    expect(url).toBe(`${origin}/manifest.webmanifest`);
    const res = await fetch(url); // no token, no cookie: as Chromium fetches it
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/manifest\+json/);
    const manifest = (await res.json()) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: 'Tributary', short_name: 'Tributary', display: 'standalone' });
    // start_url and scope: the app's root, and never the token.
    expect(new URL(manifest.start_url as string, url).href).toBe(`${origin}/`);
    expect(new URL(manifest.scope as string, url).href).toBe(`${origin}/`);
    expect(JSON.stringify(manifest)).not.toContain(new URL(serve.url).searchParams.get('token')!);
  });

  it('manifest colours match the UI: theme = the top bar, background = the page', async () => {
    const manifest = (await (await fetch(`${origin}/manifest.webmanifest`)).json()) as { theme_color: string; background_color: string };
    const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
    const colours = await page.evaluate(() => ({
      topbar: getComputedStyle(document.querySelector('.topbar')!).backgroundColor,
      page: getComputedStyle(document.documentElement).backgroundColor,
    }));
    expect(rgb(manifest.theme_color)).toBe(colours.topbar);
    expect(rgb(manifest.background_color)).toBe(colours.page);
  });

  it('every manifest icon answers 200 with an image of its stated size, 192 and 512 both plain and maskable', async () => {
    const url = `${origin}/manifest.webmanifest`;
    const { icons } = (await (await fetch(url)).json()) as { icons: ManifestIcon[] };
    const seen = new Set<string>();
    for (const icon of icons) {
      const image = await imageAt(new URL(icon.src, url).href);
      expect(image.type, icon.src).toBe(icon.type);
      if (icon.sizes === 'any') {
        expect(image.format, icon.src).toBe('svg');
        continue;
      }
      const [w, h] = icon.sizes.split('x').map(Number);
      expect({ width: image.width, height: image.height }, icon.src).toEqual({ width: w, height: h });
      seen.add(`${icon.purpose ?? 'any'} ${icon.sizes}`);
    }
    expect([...seen]).toEqual(expect.arrayContaining(['any 192x192', 'any 512x512', 'maskable 192x192', 'maskable 512x512']));
  });

  it('favicons and the apple-touch-icon load (180 px, opaque: iOS draws transparency black)', async () => {
    const links = await page.locator('link[rel=icon], link[rel=apple-touch-icon]').evaluateAll((els) => els.map((e) => ({ rel: e.getAttribute('rel'), href: (e as HTMLLinkElement).href, sizes: e.getAttribute('sizes') })));
    expect(links.map((l) => l.rel)).toEqual(['icon', 'icon', 'apple-touch-icon']);
    for (const link of links) {
      const image = await imageAt(link.href);
      if (link.sizes) expect(`${image.width}x${image.height}`).toBe(link.sizes);
    }
    const touch = await fetch(links[2].href);
    const stats = await sharp(Buffer.from(await touch.arrayBuffer())).metadata();
    expect({ width: stats.width, height: stats.height }).toEqual({ width: 180, height: 180 });
    expect((await sharp(Buffer.from(await (await fetch(links[2].href)).arrayBuffer())).stats()).isOpaque).toBe(true);
  });

  it("the page's CSP header admits the manifest (manifest-src 'self')", async () => {
    const res = await fetch(`${origin}/`);
    expect(res.headers.get('content-security-policy')).toContain("manifest-src 'self'");
  });

  it('Chromium reports the page installable, and parses the manifest without errors', async () => {
    const manifest = (await cdp.send('Page.getAppManifest', {})) as { url: string; errors: unknown[] };
    expect(manifest.url).toBe(`${origin}/manifest.webmanifest`);
    expect(manifest.errors).toEqual([]);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    expect(installabilityErrors).toEqual([]);
  });
});

describe('installed, the app gets in without a token in its start URL', () => {
  // Chromium's own install and launch (CDP domain PWA), as the browser's Install button does.
  const manifestId = () => `${origin}/`;
  async function launch(): Promise<Page> {
    const session = await browser.browser()!.newBrowserCDPSession();
    const [launched] = await Promise.all([browser.waitForEvent('page'), session.send('PWA.launch', { manifestId: manifestId() })]);
    await launched.waitForLoadState();
    return launched;
  }

  it('Chromium installs it', async () => {
    await cdp.send('PWA.install', { manifestId: manifestId() });
    const session = await browser.browser()!.newBrowserCDPSession();
    await expect(session.send('PWA.getOsAppState', { manifestId: manifestId() })).resolves.toMatchObject({ badgeCount: 0 });
  });

  it('a launch before the tab moved into the app has no token, and says so', async () => {
    const p = await launch();
    expect(p.url()).toBe(`${origin}/`);
    await expect.poll(() => p.getByRole('alert').textContent()).toContain('Open Tributary with the link');
    await p.close();
  });

  it('once the tab runs as the installed app ("Open in app"), later launches get in', async () => {
    await cdp.send('PWA.openCurrentPageInApp', { manifestId: manifestId() });
    await expect.poll(() => page.evaluate(() => matchMedia('(display-mode: standalone)').matches)).toBe(true);
    const p = await launch();
    await p.getByTestId('file-list').waitFor();
    // No token in the address; the fragment is the place the window shows (docs/ui.md, links).
    expect(p.url()).toMatch(new RegExp(`^${origin}/(#/account/\\d+)?$`));
    await p.close();
  });

  it('a new web UI link made in the app replaces the kept token: the next launch still gets in', async () => {
    const before = await page.evaluate(() => localStorage.getItem('tributary.token'));
    page.once('dialog', (d) => void d.accept());
    await page.getByTestId('settings-open').click();
    await Promise.all([page.waitForEvent('load'), page.getByTestId('ui-token-rotate').click()]);
    await page.getByTestId('file-list').waitFor();
    const after = await page.evaluate(() => localStorage.getItem('tributary.token'));
    expect(after).toMatch(/^[\w-]{32}$/);
    expect(after).not.toBe(before);
    const p = await launch();
    await p.getByTestId('file-list').waitFor();
    await p.close();
  });

  it('so does a new link made in an ordinary tab of this profile', async () => {
    const kept = await page.evaluate(() => localStorage.getItem('tributary.token'));
    const tab = await browser.newPage();
    await tab.goto(`${origin}/?token=${kept}`);
    await tab.getByTestId('file-list').waitFor();
    expect(await tab.evaluate(() => matchMedia('(display-mode: standalone)').matches)).toBe(false);
    tab.once('dialog', (d) => void d.accept());
    await tab.getByTestId('settings-open').click();
    await Promise.all([tab.waitForEvent('load'), tab.getByTestId('ui-token-rotate').click()]);
    await tab.getByTestId('file-list').waitFor();
    const fresh = await tab.evaluate(() => sessionStorage.getItem('tributary.token'));
    expect(fresh).not.toBe(kept);
    expect(await tab.evaluate(() => localStorage.getItem('tributary.token'))).toBe(fresh);
    await tab.close();
    const p = await launch();
    await p.getByTestId('file-list').waitFor();
    await p.close();
  });
});
