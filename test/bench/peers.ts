// Shared setup of the peer tools the benches run beside Tributary.
import { spawnSync } from 'node:child_process';

/** A password in the form rclone's config takes; after `--`, since a password may start with `-`. */
export function rcloneObscure(password: string): string {
  const r = spawnSync('rclone', ['obscure', '--', password], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`rclone obscure failed: ${r.stderr}`);
  return r.stdout.trim();
}
