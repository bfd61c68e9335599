// Shared setup of the peer tools the benches run beside Tributary.
import { spawnSync } from 'node:child_process';

/** A password in the form rclone's config takes; after `--`, since a password may start with `-`. */
export function rcloneObscure(password: string): string {
  const r = spawnSync('rclone', ['obscure', '--', password], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`rclone obscure failed: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * The environment that defines the rclone remote `name` (`RCLONE_CONFIG_<NAME>_<KEY>`, no config
 * file): `fields` as given, `pass` obscured as rclone's config takes it.
 */
export function rcloneRemote(name: string, fields: Record<string, string>, configDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, RCLONE_CONFIG_DIR: configDir };
  for (const [key, value] of Object.entries(fields)) env[`RCLONE_CONFIG_${name}_${key}`.toUpperCase()] = key === 'pass' ? rcloneObscure(value) : value;
  return env;
}
