/**
 * Secrets at rest. One random 256-bit master key per data directory, kept in `keys/master.key`
 * (mode 0600). Inside Electron the key file itself is wrapped by the OS keychain (`safeStorage`),
 * passed in as a `KeyWrapper`; headless, the file permissions are the protection.
 * Purpose keys (credentials, resource ids, link tokens) are derived from it with HKDF, so one
 * leaked purpose key reveals nothing about the others.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Wraps the key file with an OS keychain (Electron safeStorage); identity when absent. */
export interface KeyWrapper {
  name: string;
  wrap(key: Buffer): Buffer;
  unwrap(stored: Buffer): Buffer;
}

export type KeyPurpose = 'credentials' | 'ids' | 'links' | 'tracking' | 'ui-token';

export class Keyring {
  private constructor(private readonly master: Buffer) {}

  static open(dataDir: string, wrapper?: KeyWrapper): Keyring {
    const dir = join(dataDir, 'keys');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, wrapper ? `master.${wrapper.name}.key` : 'master.key');
    if (!existsSync(file)) {
      const key = randomBytes(32);
      writeFileSync(file, wrapper ? wrapper.wrap(key) : key, { mode: 0o600, flag: 'wx' });
    }
    chmodSync(file, 0o600);
    const stored = readFileSync(file);
    const master = wrapper ? wrapper.unwrap(stored) : stored;
    if (master.length !== 32) throw new Error(`Key file ${file} is damaged (expected 32 bytes).`);
    return new Keyring(master);
  }

  /** A 32-byte key for one purpose, derived from the master key. */
  key(purpose: KeyPurpose): Buffer {
    return Buffer.from(hkdfSync('sha256', this.master, Buffer.alloc(0), `tributary:${purpose}`, 32));
  }

  /** AES-256-GCM with a random nonce: nonce(12) | ciphertext | tag(16). */
  seal(purpose: KeyPurpose, plaintext: Buffer): Buffer {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key(purpose), nonce);
    return Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  }

  open(purpose: KeyPurpose, sealed: Buffer): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', this.key(purpose), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
  }
}
