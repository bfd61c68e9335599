/**
 * The renderer's security settings, in one place (docs/ui.md explains each):
 * a strict Content-Security-Policy (also as a response header), no navigation away from the
 * app, no new windows (a link in a mail message goes to the system browser once the user has
 * seen where it leads), no <webview>, every permission request denied.
 */
import { RENDERER_CSP } from '../csp';
import { app, BrowserWindow, dialog, session, shell, type Session, type WebContents } from 'electron';

export const APP_SCHEME = 'app';
export const APP_HOST = 'tributary';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;

export { RENDERER_CSP };

/** electron-vite's dev server (HMR needs inline styles and its WebSocket); never when packaged. */
export function devRendererUrl(): string | undefined {
  return !app.isPackaged && process.env.ELECTRON_RENDERER_URL ? process.env.ELECTRON_RENDERER_URL : undefined;
}

export function cspFor(url: string): string {
  const dev = devRendererUrl();
  if (dev && url.startsWith(dev)) {
    const origin = new URL(dev);
    return RENDERER_CSP.replace("connect-src 'self'", `connect-src 'self' ws://${origin.host}`);
  }
  return RENDERER_CSP;
}

/** Is this URL our renderer (the app:// bundle, or the dev server in development)? */
export function isAppUrl(url: string | undefined): boolean {
  if (!url) return false;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol === `${APP_SCHEME}:` && u.host === APP_HOST) return true;
  const dev = devRendererUrl();
  return !!dev && u.origin === new URL(dev).origin;
}

export function hardenSession(ses: Session = session.defaultSession): void {
  ses.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  ses.setPermissionCheckHandler(() => false);
  ses.setDevicePermissionHandler(() => false);
  ses.setDisplayMediaRequestHandler((_request, callback) => callback({}));
  // The CSP as a header too: a meta tag alone can be bypassed by content injected before it.
  ses.webRequest.onHeadersReceived((details, callback) => {
    const headers = { ...details.responseHeaders };
    if (details.resourceType === 'mainFrame' || details.resourceType === 'subFrame') {
      for (const key of Object.keys(headers)) if (key.toLowerCase() === 'content-security-policy') delete headers[key];
      headers['Content-Security-Policy'] = [cspFor(details.url)];
      headers['X-Content-Type-Options'] = ['nosniff'];
    }
    callback({ responseHeaders: headers });
  });
}

/** Applied to every WebContents the app ever creates. */
export function hardenContents(contents: WebContents): void {
  contents.on('will-navigate', (event, url) => {
    if (!isAppUrl(url)) event.preventDefault();
  });
  contents.on('will-redirect', (event, url) => {
    if (!isAppUrl(url)) event.preventDefault();
  });
  contents.setWindowOpenHandler(({ url }) => {
    if (isExternalLink(url)) void confirmExternal(contents, url);
    return { action: 'deny' };
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
}

/** What a link in a message may open outside the app: web pages and mail addresses. */
export function isExternalLink(url: string): boolean {
  try {
    return ['http:', 'https:', 'mailto:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** Shows the link's real target (not the text the message shows for it), then opens it in the system browser. */
async function confirmExternal(contents: WebContents, url: string): Promise<void> {
  const win = BrowserWindow.fromWebContents(contents);
  const options = {
    type: 'question' as const,
    buttons: ['Open in browser', 'Cancel'],
    defaultId: 0,
    cancelId: 1,
    noLink: true,
    message: 'Open this link in your browser?',
    detail: url,
  };
  const { response } = win ? await dialog.showMessageBox(win, options) : await dialog.showMessageBox(options);
  if (response === 0) await shell.openExternal(url);
}
