/**
 * Where the app's icons are at run time: resources/ at the top of the app, next to out/ (the
 * installers pack resources/icons and resources/tray into the app, see package.json "build").
 * No Electron import.
 */
import { join } from 'node:path';

/** resources/ for a main-process bundle in out/main/. */
export function resourcesDirFor(mainDir: string): string {
  return join(mainDir, '..', '..', 'resources');
}

/** The window's and notifications' icon (Linux and Windows use it; macOS takes the bundle's). */
export function appIconPath(resourcesDir: string): string {
  return join(resourcesDir, 'icons', '256x256.png');
}
