// Credentials at rest: a 0600 key file headless, an OS-keychain-wrapped key
// in Electron, and no silent loss of stored credentials when the keychain comes or goes.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src-main/app';
import { Keyring, type KeyWrapper } from '../../src-main/secrets';
import { scratchDir } from '../servers/util';

const xorWrapper: KeyWrapper = {
  name: 'test',
  wrap: (k) => Buffer.concat([Buffer.from('W:'), Buffer.from(k.map((b) => b ^ 0x5a))]),
  unwrap: (s) => Buffer.from(Buffer.from(s.subarray(2)).map((b) => b ^ 0x5a)),
};

describe('keyring', () => {
  it('creates a 0600 key file and seals/opens round trip; a flipped bit fails', () => {
    const dir = scratchDir('keys');
    const k = Keyring.open(dir);
    expect(statSync(join(dir, 'keys/master.key')).mode & 0o777).toBe(0o600);
    const sealed = k.seal('credentials', Buffer.from('secret'));
    expect(Keyring.open(dir).open('credentials', sealed).toString()).toBe('secret');
    sealed[20] ^= 1;
    expect(() => k.open('credentials', sealed)).toThrow();
    expect(k.key('ids').equals(k.key('credentials'))).toBe(false);
  });

  it('wraps an existing plain key when a keychain appears, keeping what was sealed', () => {
    const dir = scratchDir('keys');
    const sealed = Keyring.open(dir).seal('credentials', Buffer.from('pw'));
    const wrapped = Keyring.open(dir, xorWrapper);
    expect(wrapped.open('credentials', sealed).toString()).toBe('pw');
    expect(readdirSync(join(dir, 'keys'))).toEqual(['master.test.key']);
    expect(readFileSync(join(dir, 'keys/master.test.key')).subarray(0, 2).toString()).toBe('W:');
  });

  it('refuses to start over with a new key when the keychain has gone away', () => {
    const dir = scratchDir('keys');
    Keyring.open(dir, xorWrapper);
    expect(() => Keyring.open(dir)).toThrow(/OS keychain/);
  });

  it('never stores connection options (credentials) in clear text in the database', async () => {
    const dir = scratchDir('app');
    const app = await createApp({ dataDir: dir, defaultLocalFolder: false });
    await app.accounts.connect({ service: 'memory', options: { store: 'Secr3t-Store-Name' }, account: 'Visible name' });
    await app.close();
    const files = readdirSync(dir).filter((f) => f.startsWith('tributary.db'));
    for (const f of files) expect(readFileSync(join(dir, f)).includes(Buffer.from('Secr3t-Store-Name'))).toBe(false);
  });
});
