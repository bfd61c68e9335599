/**
 * Electron composition root: the shared core (createApp) with the master key wrapped by the OS
 * keychain, the localhost server (web UI + API, as in headless mode), one locked-down window
 * talking the contract over IPC, the menu and the tray icon. The only file, with electron/ and ipc/, that
 * imports electron.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { app as electronApp, BrowserWindow, dialog, ipcMain, Notification } from 'electron';
import { createApp, type App } from './app';
import { DEFAULT_PORT } from './cli-options';
import { safeStorageKeyWrapper } from './electron/keywrapper';
import { installMenu } from './electron/menu';
import { registerAppScheme, serveRenderer } from './electron/protocol';
import { hardenContents, hardenSession, isAppUrl } from './electron/security';
import { createMainWindow } from './electron/window';
import { announceLongTransfers } from './electron/notifications';
import { appIconPath, resourcesDirFor } from './electron/resources';
import { createTray, type AppTray } from './electron/tray';
import { closeHidesToTray } from './electron/tray-status';
import { forwardEvents, registerRpc } from './ipc/rpc';
import { installProcessGuard } from './process-guard';
import type { HttpServer } from './server/http';
import { startLocalServer } from './server/local';
import { createHandlers } from './rpc/handlers';

const here = dirname(fileURLToPath(import.meta.url));
const rendererDir = join(here, '../renderer');
const preloadPath = join(here, '../preload/index.cjs');
const resourcesDir = resourcesDirFor(here);
const appIcon = appIconPath(resourcesDir);

// Before `ready`: the app:// scheme must be privileged, and only one instance may own the data dir.
registerAppScheme();
const primary = electronApp.requestSingleInstanceLock();
electronApp.on('web-contents-created', (_e, contents) => hardenContents(contents));

let core: App | null = null;
let http: HttpServer | null = null;
let mainWindow: BrowserWindow | null = null;
let tray: AppTray | null = null;
/** Set once the app is quitting: closing the window then closes it rather than hiding it. */
let leaving = false;

/** The local server on its usual port, or any free one when that is taken. */
async function startServer(app: App): Promise<HttpServer> {
  const port = Number(process.env.TRIBUTARY_PORT ?? DEFAULT_PORT);
  const options = {
    host: '127.0.0.1',
    rendererDir,
    // The browser face keeps headless semantics even here: no uploads by local path, no
    // writing to local paths; those belong to the window, over IPC, behind user gestures.
    platform: { mode: 'headless' as const, version: electronApp.getVersion() },
  };
  try {
    return await startLocalServer(app, { ...options, port });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    return startLocalServer(app, { ...options, port: 0 });
  }
}

function openWindow(): void {
  const win = createMainWindow(preloadPath, appIcon);
  mainWindow = win;
  win.on('closed', () => (mainWindow = null));
  // Windows and Linux: closing hides the window to the tray, where transfers keep running.
  win.on('close', (event) => {
    if (leaving || !tray || !closeHidesToTray(process.platform)) return;
    event.preventDefault();
    win.hide();
  });
  // Clearing finished transfers in the window sends no event: look again when focus moves.
  win.on('focus', () => tray?.refresh());
  win.on('blur', () => tray?.refresh());
}

function showWindow(): void {
  if (!mainWindow) return openWindow();
  if (mainWindow.isMinimized()) mainWindow.restore();
  mainWindow.show();
  mainWindow.focus();
}

async function main(): Promise<void> {
  await electronApp.whenReady();
  hardenSession();
  serveRenderer(rendererDir);
  installMenu();
  // Packaged, the bundle's icon.icns is the Dock icon; unpackaged it would be Electron's.
  if (process.platform === 'darwin' && !electronApp.isPackaged) electronApp.dock?.setIcon(appIcon);

  core = await createApp({ dataDir: electronApp.getPath('userData'), keyWrapper: safeStorageKeyWrapper() });
  http = await startServer(core).catch((e) => {
    // The window works without the localhost API; say so rather than refuse to start.
    console.error(`Tributary: the localhost API could not start: ${e instanceof Error ? e.message : e}`);
    return null;
  });

  const handlers = createHandlers(core, {
    mode: 'electron',
    version: electronApp.getVersion(),
    apiUrl: http?.url ?? null,
    async chooseSavePath(suggestedName) {
      const options = { defaultPath: join(electronApp.getPath('downloads'), suggestedName) };
      const result = mainWindow ? await dialog.showSaveDialog(mainWindow, options) : await dialog.showSaveDialog(options);
      return result.canceled || !result.filePath ? null : result.filePath;
    },
    async chooseFolder() {
      const options = { defaultPath: electronApp.getPath('downloads'), properties: ['openDirectory', 'createDirectory'] as ('openDirectory' | 'createDirectory')[] };
      const result = mainWindow ? await dialog.showOpenDialog(mainWindow, options) : await dialog.showOpenDialog(options);
      return result.canceled ? null : (result.filePaths[0] ?? null);
    },
  });
  registerRpc(ipcMain, handlers, isAppUrl);
  forwardEvents(core.events, () => BrowserWindow.getAllWindows(), isAppUrl);
  announceLongTransfers(core, {
    isFocused: () => BrowserWindow.getFocusedWindow() !== null,
    show(notice) {
      if (!Notification.isSupported()) return;
      const n = new Notification({ title: notice.title, body: notice.body, icon: appIcon });
      n.on('click', showWindow);
      n.show();
    },
  });

  try {
    tray = createTray(core, resourcesDir, { open: showWindow, quit: () => electronApp.quit() });
  } catch (e) {
    // Without a tray (a Linux panel with no status area) closing the window quits, as before.
    console.error(`Tributary: no tray icon: ${e instanceof Error ? e.message : e}`);
  }

  openWindow();
  electronApp.on('second-instance', showWindow);
  electronApp.on('activate', () => {
    if (!mainWindow) openWindow();
  });
}

electronApp.on('before-quit', () => (leaving = true));

electronApp.on('window-all-closed', () => {
  if (process.platform !== 'darwin') electronApp.quit();
});

let quitting = false;
/** Non-zero after an uncaught exception; `app.quit()` cannot carry an exit code, `app.exit()` can. */
let exitCode = 0;
electronApp.on('will-quit', (event) => {
  if (quitting || (!http && !core)) return;
  // Close the server and the database before exiting, then quit for real.
  event.preventDefault();
  quitting = true;
  void (async () => {
    tray?.destroy();
    await http?.close().catch(() => {});
    await core?.close().catch(() => {});
    if (exitCode !== 0) electronApp.exit(exitCode);
    else electronApp.quit();
  })();
});

installProcessGuard(() => {
  exitCode = 1;
  // With nothing open there is nothing to wait for; an exception while closing may come from
  // the closing itself, so waiting on it could hang.
  if ((!http && !core) || quitting) electronApp.exit(1);
  else electronApp.quit();
});

if (!primary) {
  // Another Tributary owns the data directory; it gets focused through 'second-instance'.
  electronApp.quit();
} else {
  main().catch((e) => {
    dialog.showErrorBox('Tributary could not start', e instanceof Error ? e.message : String(e));
    electronApp.exit(1);
  });
}
