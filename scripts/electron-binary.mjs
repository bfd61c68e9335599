// Where the Electron binary of node_modules/electron is, or null when it was never downloaded
// (machines without access to Electron's downloads): `npm start` then runs headless, and
// `npm run dist` refuses.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function electronBinary(root) {
  const pkg = join(root, 'node_modules/electron');
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile)) return null;
  const bin = join(process.env.ELECTRON_OVERRIDE_DIST_PATH ?? join(pkg, 'dist'), readFileSync(pathFile, 'utf8').trim());
  return existsSync(bin) ? bin : null;
}
