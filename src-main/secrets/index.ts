/**
 * Secrets at rest. One random 256-bit master key per data directory, kept in `keys/master.key`
 * (mode 0600). Inside Electron the key file itself is wrapped by the OS keychain (`safeStorage`),
 * passed in as a `KeyWrapper`; headless, the file permissions are the protection.
 * Purpose keys (credentials, resource ids, link tokens) are derived from it with HKDF, so one
 * leaked purpose key reveals nothing about the others.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Wraps the key file with an OS keychain (Electron safeStorage); identity when absent. */
export interface KeyWrapper {
  name: string;
  wrap(key: Buffer): Buffer;
  unwrap(stored: Buffer): Buffer;
}

export type KeyPurpose = 'credentials' | 'ids' | 'links' | 'tracking' | 'ui-token';

export class Keyring {
  private constructor(
    private readonly master: Buffer,
    /** The master key was made by this run: a new install, nothing sealed with it yet. */
    readonly created: boolean,
  ) {}

  /**
   * Opens the data directory's master key, creating it on first run. When an OS keychain
   * wrapper is present the key is kept wrapped (a plain key from an earlier run without the
   * keychain is wrapped and the plain file removed); when the keychain has become unavailable
   * a wrapped key cannot be read, and that is a clear error rather than a silent new key that
   * would make every stored credential unreadable.
   */
  static open(dataDir: string, wrapper?: KeyWrapper): Keyring {
    const dir = join(dataDir, 'keys');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const plainFile = join(dir, 'master.key');
    const wrappedFile = wrapper ? join(dir, `master.${wrapper.name}.key`) : null;
    let master: Buffer;
    let created = false;
    if (wrappedFile && existsSync(wrappedFile)) {
      master = wrapper!.unwrap(readFileSync(wrappedFile));
    } else if (existsSync(plainFile)) {
      chmodSync(plainFile, 0o600);
      master = readFileSync(plainFile);
      if (wrappedFile) {
        writeFileSync(wrappedFile, wrapper!.wrap(master), { mode: 0o600, flag: 'wx' });
        unlinkSync(plainFile);
      }
    } else {
      const other = readdirSync(dir).find((f) => /^master\..+\.key$/.test(f));
      if (other && !wrappedFile) {
        throw new Error(`The keys in ${dir} are protected by the OS keychain (${other}), which is not available now; start Tributary where the keychain is unlocked.`);
      }
      master = randomBytes(32);
      created = true;
      writeFileSync(wrappedFile ?? plainFile, wrappedFile ? wrapper!.wrap(master) : master, { mode: 0o600, flag: 'wx' });
    }
    if (master.length !== 32) throw new Error(`The key file in ${dir} is damaged (expected 32 bytes).`);
    return new Keyring(master, created);
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
