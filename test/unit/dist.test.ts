// `npm run dist` (scripts/dist.mjs) where no Electron binary is installed: it refuses before
// building anything, says what is missing and how to get it (README.md, "Installers"), and
// exits non-zero.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

describe('npm run dist without an Electron binary', () => {
  it('refuses with what is missing and how to get it, exit code 1, and builds nothing', () => {
    // An empty Electron dist folder: no binary even on a machine that has one installed.
    const empty = mkdtempSync(join(tmpdir(), 'tributary-no-electron-'));
    const hadDist = existsSync(join(root, 'dist'));
    try {
      const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'dist'], {
        cwd: root,
        env: { ...process.env, ELECTRON_OVERRIDE_DIST_PATH: empty },
        encoding: 'utf8',
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('npm run dist: cannot build installers here.');
      expect(r.stderr).toContain('No Electron binary is installed');
      expect(r.stderr).toContain('node node_modules/electron/install.js');
      expect(r.stdout).not.toContain('Building Tributary');
      expect(r.stdout).not.toContain('electron-builder');
      expect(existsSync(join(root, 'dist'))).toBe(hadDist);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
