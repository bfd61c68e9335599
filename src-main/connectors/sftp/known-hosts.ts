/**
 * Host keys seen before, trust-on-first-use, in `<dataDir>/connectors/sftp/known_hosts.json`:
 * `{ "[host]:port": { "fingerprint": "<SHA256 base64>", "firstSeen": ISO, "lastSeen": ISO } }`.
 * JSON rather than OpenSSH's known_hosts format because only Tributary reads it and it pins
 * fingerprints, not whole keys.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** SHA256 of the raw public key blob, base64 without padding: what `ssh-keygen -l` prints. */
export function fingerprintOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64').replace(/=+$/, '');
}

/** Accepts "SHA256:abc…", "abc…" and padded base64; returns the bare unpadded form. */
export function normalizeFingerprint(value: string): string {
  return value.trim().replace(/^SHA256:/i, '').replace(/=+$/, '');
}

interface Known {
  fingerprint: string;
  firstSeen: string;
  lastSeen: string;
}

export class KnownHosts {
  private readonly file: string;

  constructor(dataDir: string) {
    this.file = join(dataDir, 'connectors', 'sftp', 'known_hosts.json');
  }

  private load(): Record<string, Known> {
    try {
      return JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, Known>;
    } catch {
      return {};
    }
  }

  get(hostId: string): string | undefined {
    return this.load()[hostId]?.fingerprint;
  }

  set(hostId: string, fingerprint: string): void {
    const all = this.load();
    const now = new Date().toISOString();
    const prev = all[hostId];
    if (prev?.fingerprint === fingerprint && Date.now() - Date.parse(prev.lastSeen) < 86_400_000) return;
    all[hostId] = { fingerprint, firstSeen: prev?.fingerprint === fingerprint ? prev.firstSeen : now, lastSeen: now };
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    // Write-then-rename so that two accounts connecting at once never leave a torn file.
    const temp = `${this.file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(temp, JSON.stringify(all, null, 2), { mode: 0o600 });
    renameSync(temp, this.file);
  }
}
