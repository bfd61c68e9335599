/**
 * Names from a backend or a message become file names on this computer (docs/ui.md, downloads;
 * spec 2, attachments: a filename is the sender's text): the desktop's save dialog is offered,
 * and a download into a folder writes, only a plain name inside the folder the user chose —
 * never a path out of it, never control characters, never more than 255 bytes.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freeLocalPath, localName } from '../../src-main/downloads/into-folder';

describe('local file names from remote names', () => {
  it.each([
    ['report.pdf', 'report.pdf'],
    ['../../../../home/user/.config/autostart/x.desktop', 'x.desktop'],
    ['..\\..\\Windows\\evil.bat', 'evil.bat'],
    ['../../x\u0000y\r\n.txt', 'xy.txt'],
    ['..', 'download'],
    ['/', 'download'],
    ['\u0007', 'download'],
    ['  spaced name.txt  ', 'spaced name.txt'],
  ])('%j is saved as %j', (remote, local) => {
    expect(localName(remote)).toBe(local);
  });

  it('a name over 255 bytes is cut between characters, keeping its extension', () => {
    const name = localName(`${'文'.repeat(100)}.pdf`);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(name).toMatch(/^文+\.pdf$/);
  });

  it('a download into a folder stays in it, and never takes a name that is there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-local-names-'));
    const first = freeLocalPath(dir, '../../evil.txt');
    expect(first).toBe(join(dir, 'evil.txt'));
    writeFileSync(first, 'x');
    const second = freeLocalPath(dir, 'sub/../evil.txt');
    expect(dirname(second)).toBe(dir);
    expect(second).toBe(join(dir, 'evil (2).txt'));
  });
});
