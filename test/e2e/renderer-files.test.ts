/**
 * The Electron `app://` handler serves the renderer folder and nothing else (docs/ui.md,
 * "Security settings"): dot segments, encoded dot segments and NUL bytes cannot leave it.
 */
import { join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contentType, rendererFile } from '../../src-main/electron/renderer-files';

const ROOT = join(sep, 'opt', 'tributary', 'out', 'renderer');

describe('app:// renderer files (renderer isolation)', () => {
  it('maps the root to index.html and assets below the folder', () => {
    expect(rendererFile(ROOT, '/')).toBe(join(ROOT, 'index.html'));
    expect(rendererFile(ROOT, '/assets/index-abc.js')).toBe(join(ROOT, 'assets', 'index-abc.js'));
    expect(rendererFile(ROOT, '/assets/a%20b.css')).toBe(join(ROOT, 'assets', 'a b.css'));
    expect(contentType(join(ROOT, 'index.html'))).toBe('text/html; charset=utf-8');
    expect(contentType(join(ROOT, 'x.bin'))).toBe('application/octet-stream');
  });

  it('refuses every way out of the folder', () => {
    for (const path of ['/../main/index.js', '/assets/../../preload/index.cjs', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc/passwd', '/%00', '/%E0%A4%A']) {
      expect(rendererFile(ROOT, path), path).toBeNull();
    }
  });
});
