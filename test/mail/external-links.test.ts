/**
 * Links in mail, desktop side (docs/ui.md, "Links in mail"): a link a message opens (a popup of
 * its frame) never opens a window in the app; the user first sees the link's real target, and
 * only "Open in browser" hands it to the system browser. There is no Electron binary here, so
 * Electron's `dialog` and `shell` are stand-ins that record what they were asked; the handler is
 * the real one from src-main/electron/security.ts, installed on a WebContents stand-in.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';

const calls = vi.hoisted(() => ({ dialogs: [] as { message: string; detail: string; buttons: string[] }[], opened: [] as string[], answer: 0 }));

vi.mock('electron', () => ({
  app: { isPackaged: true },
  session: {},
  BrowserWindow: { fromWebContents: () => null },
  dialog: {
    showMessageBox: async (options: { message: string; detail: string; buttons: string[] }) => {
      calls.dialogs.push({ message: options.message, detail: options.detail, buttons: options.buttons });
      return { response: calls.answer };
    },
  },
  shell: {
    openExternal: async (url: string) => {
      calls.opened.push(url);
    },
  },
}));

const { hardenContents, isExternalLink } = await import('../../src-main/electron/security');

type OpenHandler = (details: { url: string }) => { action: 'allow' | 'deny' };

function contents() {
  let handler: OpenHandler | null = null;
  const wc = {
    on: () => wc,
    setWindowOpenHandler: (h: OpenHandler) => {
      handler = h;
    },
  };
  hardenContents(wc as never);
  return (url: string) => handler!({ url });
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('a link in a message, in the desktop app (docs/ui.md, Links in mail)', () => {
  beforeEach(() => {
    calls.dialogs.length = 0;
    calls.opened.length = 0;
  });

  it('never opens a window in the app; shows the real target, and opens it in the system browser once confirmed', async () => {
    const open = contents();
    expect(open('https://billing.example.test/pay?invoice=42')).toEqual({ action: 'deny' });
    await settle();
    expect(calls.dialogs).toEqual([{ message: 'Open this link in your browser?', detail: 'https://billing.example.test/pay?invoice=42', buttons: ['Open in browser', 'Cancel'] }]);
    expect(calls.opened).toEqual(['https://billing.example.test/pay?invoice=42']);
  });

  it('Cancel opens nothing', async () => {
    calls.answer = 1;
    const open = contents();
    expect(open('http://example.test/')).toEqual({ action: 'deny' });
    await settle();
    expect(calls.dialogs).toHaveLength(1);
    expect(calls.opened).toEqual([]);
    calls.answer = 0;
  });

  it('only web pages and mail addresses are offered: file:, javascript:, app: and custom schemes are refused without asking', async () => {
    const open = contents();
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'app://tributary/index.html', 'smb://host/share', 'not a url']) expect(open(url)).toEqual({ action: 'deny' });
    await settle();
    expect(calls.dialogs).toEqual([]);
    expect(calls.opened).toEqual([]);
    expect(['https://a.test/', 'http://a.test/', 'mailto:bob@example.test'].every(isExternalLink)).toBe(true);
  });
});
