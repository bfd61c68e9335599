/**
 * A bench's own child process (the bench file run again with `child` and its arguments), so that
 * what Tributary does is measured in a process of its own (time and RSS); the child prints its
 * result as JSON on its last line.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

/** `tree`: another checkout whose code runs the child (a bench alternating old and new code). */
export async function benchChild<T>(benchFile: string, args: string[], what: string, tree = root): Promise<T> {
  const p = spawn(process.execPath, [join(tree, 'scripts/run-ts.mjs'), join(tree, 'test/bench', benchFile), 'child', ...args], {
    cwd: tree,
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  const [code] = await once(p, 'exit');
  if (code !== 0) throw new Error(`${what} failed (${code}): ${out}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as T;
}
