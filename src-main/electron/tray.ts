/**
 * The tray (menu-bar) icon: transfer status at a glance, Open, Pause/Resume all, Quit. What it
 * shows and offers is decided in tray-status.ts; this only draws it with Electron.
 */
import { join } from 'node:path';
import { Menu, nativeImage, nativeTheme, Tray } from 'electron';
import type { App } from '../app';
import { panelIsDark, pauseAll, resumeAll, trayIconFile, trayMenu, watchTrayStatus, type TrayAction, type TrayStatus } from './tray-status';

export interface TrayHandlers {
  open(): void;
  quit(): void;
}

export interface AppTray {
  /** Recomputes the status (after changes that send no event, e.g. clearing finished transfers). */
  refresh(): void;
  destroy(): void;
}

export function createTray(app: Pick<App, 'events' | 'transfers'>, resourcesDir: string, handlers: TrayHandlers): AppTray {
  const darkPanel = () =>
    panelIsDark(process.platform, {
      systemDark: nativeTheme.shouldUseDarkColorsForSystemIntegratedUI,
      themeDark: nativeTheme.shouldUseDarkColors,
      desktop: process.env.XDG_CURRENT_DESKTOP,
    });
  const icon = (state: TrayStatus['state']) => nativeImage.createFromPath(join(resourcesDir, 'tray', trayIconFile(state, process.platform, darkPanel())));
  let current: TrayStatus | null = null;
  const tray = new Tray(icon('idle'));

  const run = (action: TrayAction) => {
    if (action === 'open') handlers.open();
    else if (action === 'pauseAll') pauseAll(app.transfers);
    else if (action === 'resumeAll') resumeAll(app.transfers);
    else handlers.quit();
  };
  const draw = (status: TrayStatus) => {
    current = status;
    tray.setImage(icon(status.state));
    tray.setToolTip(status.tooltip);
    const items = trayMenu(status).map((item) =>
      item.type === 'separator' ? { type: 'separator' as const } : { label: item.label, enabled: item.enabled, click: item.action ? () => run(item.action!) : undefined },
    );
    tray.setContextMenu(Menu.buildFromTemplate(items));
  };
  const watch = watchTrayStatus(app, draw);
  const redrawIcon = () => current && tray.setImage(icon(current.state));
  nativeTheme.on('updated', redrawIcon);
  // Windows: a click on the icon opens the window (the menu is on right-click).
  if (process.platform === 'win32') tray.on('click', () => handlers.open());

  return {
    refresh: watch.refresh,
    destroy() {
      watch.stop();
      nativeTheme.off('updated', redrawIcon);
      tray.destroy();
    },
  };
}
