/**
 * Wraps Tributary's master key with the OS keychain through Electron's safeStorage (Keychain on
 * macOS, DPAPI on Windows, libsecret/kwallet on Linux). On Linux without a keyring safeStorage
 * falls back to a hard-coded password ("basic_text"), which protects nothing: then we use no
 * wrapper and the key file's 0600 permissions are the protection, as in headless mode.
 */
import { safeStorage } from 'electron';
import type { KeyWrapper } from '../secrets';

export function safeStorageKeyWrapper(): KeyWrapper | undefined {
  if (!safeStorage.isEncryptionAvailable()) return undefined;
  if (process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text') return undefined;
  return {
    name: 'safestorage',
    wrap: (key) => safeStorage.encryptString(key.toString('base64')),
    unwrap: (stored) => Buffer.from(safeStorage.decryptString(stored), 'base64'),
  };
}
