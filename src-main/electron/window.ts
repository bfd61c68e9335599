/** The one main window, with the renderer locked down (see security.ts and docs/ui.md). */
import { BrowserWindow } from 'electron';
import { APP_ORIGIN, devRendererUrl } from './security';

export function createMainWindow(preloadPath: string, icon: string): BrowserWindow {
  const win = new BrowserWindow({
    width: 1200,
    height: 800,
    minWidth: 720,
    minHeight: 480,
    show: false,
    title: 'Tributary',
    icon,
    backgroundColor: '#f6f7f9',
    webPreferences: {
      preload: preloadPath,
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
      safeDialogs: true,
      navigateOnDragDrop: false,
    },
  });
  win.once('ready-to-show', () => win.show());
  void win.loadURL(devRendererUrl() ?? `${APP_ORIGIN}/index.html`);
  return win;
}
