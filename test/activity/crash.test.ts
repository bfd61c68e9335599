/**
 * spec 3, Activity list rules ("a small chance of duplicates exists, but applying all activity
 * yields the upstream's current state") across a crash: the app, a real child process, is
 * SIGKILLed in the middle of a burst of file creations and restarted; every file must appear
 * in the log, and duplicates are counted and reported.
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';
import { until } from './helpers';

const ROOT = join(import.meta.dirname, '..', '..');

function startChild(dataDir: string, folder: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts/run-ts.mjs'), 'test/activity/crash-child.ts', dataDir, folder], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('READY')) resolve(child);
    });
    child.stderr!.on('data', (d) => (err += d));
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before READY: ${err}`)));
  });
}

describe('spec 3, Activity list: SIGKILL during a burst, then restart', () => {
  it('loses no change; duplicates are measured', async () => {
    const dataDir = scratchDir('activity-crash-data');
    const folder = scratchDir('activity-crash-folder');
    const N = 600;
    try {
      let child = await startChild(dataDir, folder);
      const died = new Promise((r) => child.once('exit', r));
      for (let i = 0; i < N; i++) {
        writeFileSync(join(folder, `f-${String(i).padStart(4, '0')}.txt`), `file ${i}`);
        if (i === N / 2) child.kill('SIGKILL'); // mid-burst, with watch batches in flight
        if (i % 20 === 0) await new Promise((r) => setTimeout(r, 5));
      }
      await died;
      child = await startChild(dataDir, folder);
      const db = new Database(join(dataDir, 'tributary.db'), { readonly: true });
      try {
        const counts = await until(() => {
          const rows = db.prepare("SELECT path, COUNT(*) AS n FROM activity WHERE type = 'add' GROUP BY path").all() as { path: string; n: number }[];
          return rows.length >= N ? rows : undefined;
        }, 30_000, 'all files in the log');
        const lost = N - counts.length;
        const duplicates = counts.reduce((sum, r) => sum + r.n - 1, 0);
        console.log(`crash test: ${N} files, SIGKILL after ${N / 2}: lost ${lost}, duplicate add records ${duplicates}`);
        expect(lost).toBe(0);
        // Snapshot and activity commit together, so a restart cannot replay committed changes.
        expect(duplicates).toBe(0);
        const other = db.prepare("SELECT COUNT(*) AS n FROM activity WHERE type = 'delete'").get() as { n: number };
        expect(other.n).toBe(0);
      } finally {
        db.close();
        child.kill('SIGKILL');
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);
});
