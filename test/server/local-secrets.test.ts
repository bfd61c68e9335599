// Secrets of the local install that other users of the machine must not see: the database file
// (credentials, mail) and the REST API key given to `serve`.
import { chmodSync, closeSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { parseServeOptions } from '../../src-main/cli-options';
import { scratchDir } from '../servers/util';

const mode = (f: string) => statSync(f).mode & 0o777;

describe('the database file is readable by its owner only', () => {
  it('is created 0600 (and its -wal/-shm) even when the data folder exists already and the umask is lax', () => {
    const dir = scratchDir('db-mode');
    const old = process.umask(0o022);
    try {
      const file = join(dir, 'tributary.db');
      const db = openDb(file);
      db.prepare('CREATE TABLE IF NOT EXISTS t (x INTEGER) STRICT').run();
      db.prepare('INSERT INTO t VALUES (1)').run();
      expect(mode(file)).toBe(0o600);
      expect(mode(`${file}-wal`)).toBe(0o600);
      expect(mode(`${file}-shm`)).toBe(0o600);
      db.close();
    } finally {
      process.umask(old);
    }
  });

  it('fixes the mode of a database an older install left world-readable', () => {
    const dir = scratchDir('db-mode-old');
    const file = join(dir, 'tributary.db');
    openDb(file).close();
    chmodSync(file, 0o644);
    closeSync(openSync(`${file}-wal`, 'a', 0o644));
    chmodSync(`${file}-wal`, 0o644);
    const db = openDb(file);
    expect(mode(file)).toBe(0o600);
    expect(mode(`${file}-wal`)).toBe(0o600);
    db.close();
  });
});

describe('serve options: the API key without showing it in ps (README, serve options)', () => {
  it('takes the key from TRIBUTARY_API_KEY without a warning', () => {
    const o = parseServeOptions([], { TRIBUTARY_API_KEY: 'env-key-0123456789abcdef' });
    expect(o.apiKey).toBe('env-key-0123456789abcdef');
    expect(o.warnings).toEqual([]);
  });

  it('takes the key from --api-key-file (its first line), without a warning', () => {
    const file = join(scratchDir('key-file'), 'key');
    writeFileSync(file, 'file-key-0123456789abcdef\n', { mode: 0o600 });
    const o = parseServeOptions(['--api-key-file', file], { TRIBUTARY_API_KEY: 'env-key-0123456789abcdef' });
    expect(o.apiKey).toBe('file-key-0123456789abcdef');
    expect(o.warnings).toEqual([]);
    expect(() => parseServeOptions(['--api-key-file', join(file, 'missing')], {})).toThrow('--api-key-file: cannot read');
  });

  it('still takes --api-key, with a warning that other users can see it', () => {
    const o = parseServeOptions(['--api-key', 'argv-key-0123456789abcdef'], {});
    expect(o.apiKey).toBe('argv-key-0123456789abcdef');
    expect(o.warnings.join('\n')).toMatch(/visible to other users.*TRIBUTARY_API_KEY.*--api-key-file/);
  });
});
