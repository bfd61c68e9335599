// The job runner the uploader and the downloader share (docs/uploads.md: pause, resume, retry,
// and jobs that survive a restart). The real uploads and downloads over it are in
// test/transfers/pause-resume.test.ts and test/uploads/uploader.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { nowIso } from '../../src-main/cache/db';
import { ServiceError } from '../../src-main/errors';
import { DurableJobs, type JobRowBase } from '../../src-main/services/durable-jobs';
import { scratchDir } from '../servers/util';

interface Row extends JobRowBase {
  account_id: number;
  name: string;
  size: number | null;
}

let app: App;
let account: number;

beforeAll(async () => {
  app = await createApp({ dataDir: scratchDir('durable-jobs'), defaultLocalFolder: false });
  account = (await app.accounts.connect({ service: 'memory', options: { store: `durable-jobs-${Date.now()}` } })).id;
});
afterAll(async () => {
  await app?.close();
});

function insert(name: string, state: Row['state']): number {
  const now = nowIso();
  const info = app.db
    .prepare("INSERT INTO download_jobs (account_id, file_id, name, target_path, size, state, created, updated) VALUES (?, 'f', ?, '/nowhere', 10, ?, ?, ?)")
    .run(account, name, state, now, now);
  return Number(info.lastInsertRowid);
}

/** A job kind whose attempt waits until the test ends it, recording what the runner asked. */
function runner() {
  const calls: string[] = [];
  const ends = new Map<number, (e?: unknown) => void>();
  const jobs: DurableJobs<Row, string> = new DurableJobs<Row, string>(app, {
    table: 'download_jobs',
    noun: 'Download',
    transferId: (id) => `test-${id}`,
    transferInit: (row) => ({ direction: 'download', name: row.name, account: row.account_id, target: 'f', bytesTotal: row.size }),
    run: async (id) => {
      calls.push(`run ${id}`);
      const { transferId, signal } = jobs.start(jobs.row(id));
      try {
        await new Promise<void>((resolve, reject) => {
          ends.set(id, (e) => (e ? reject(e) : resolve()));
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
        jobs.done(id, transferId);
        return `done ${id}`;
      } catch (e) {
        throw await jobs.settle(id, transferId, signal, e);
      }
    },
    keptBytes: () => 4,
    discard: async (row) => void calls.push(`discard ${row.id}`),
  });
  return { jobs, calls, end: (id: number, e?: unknown) => ends.get(id)!(e) };
}

const transfer = (id: string) => app.transfers.list().find((t) => t.id === id);
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

describe('durable jobs', () => {
  it('runs a job once however often it is resumed while it runs', async () => {
    const { jobs, calls, end } = runner();
    const id = insert('once.bin', 'running');
    const a = jobs.resume(id);
    const b = jobs.resume(id);
    expect(b).toBe(a);
    await until(() => transfer(`test-${id}`)?.state === 'running');
    end(id);
    expect(await a).toBe(`done ${id}`);
    expect(calls).toEqual([`run ${id}`]);
    expect(jobs.row(id)).toMatchObject({ state: 'done', error: null });
    expect(transfer(`test-${id}`)).toMatchObject({ state: 'done' });
  });

  it('at start, lists a paused job paused with the bytes it keeps, and continues a running one', async () => {
    const { jobs, calls, end } = runner();
    const paused = insert('paused.bin', 'paused');
    const running = insert('running.bin', 'running');
    const settled = jobs.resumeAll();
    await until(() => calls.includes(`run ${running}`));
    expect(transfer(`test-${paused}`)).toMatchObject({ state: 'paused', bytesDone: 4, actions: ['resume', 'cancel'] });
    expect(calls).not.toContain(`run ${paused}`);
    end(running);
    expect((await settled).map((r) => r.status)).toEqual(['fulfilled']);

    // Resume from Transfers continues the paused job under the same transfer.
    app.transfers.resume(`test-${paused}`);
    await until(() => calls.includes(`run ${paused}`));
    expect(jobs.row(paused).state).toBe('running');
    end(paused);
    await until(() => jobs.row(paused).state === 'done');
  });

  it('records how an attempt ended: pause keeps, cancel discards, a failure keeps its error', async () => {
    const { jobs, calls, end } = runner();
    const p = insert('pause.bin', 'running');
    const paused = jobs.resume(p);
    await until(() => transfer(`test-${p}`)?.state === 'running');
    app.transfers.pause(`test-${p}`);
    await expect(paused).rejects.toThrow('Paused by the user.');
    expect(jobs.row(p)).toMatchObject({ state: 'paused', error: null });
    expect(calls).not.toContain(`discard ${p}`);

    // Cancelling the paused job drops what it kept.
    await app.transfers.cancel(`test-${p}`);
    expect(calls).toContain(`discard ${p}`);
    expect(jobs.row(p)).toMatchObject({ state: 'cancelled', error: 'Cancelled by the user.' });

    const c = insert('cancel.bin', 'running');
    const cancelled = jobs.resume(c);
    await until(() => transfer(`test-${c}`)?.state === 'running');
    await app.transfers.cancel(`test-${c}`);
    await expect(cancelled).rejects.toBeInstanceOf(ServiceError);
    expect(calls).toContain(`discard ${c}`);
    expect(jobs.row(c)).toMatchObject({ state: 'cancelled', error: 'Cancelled by the user.' });

    const f = insert('fail.bin', 'running');
    const failed = jobs.resume(f);
    await until(() => transfer(`test-${f}`)?.state === 'running');
    end(f, new ServiceError('upstream_error', 'The server went away.'));
    await expect(failed).rejects.toMatchObject({ code: 'upstream_error' });
    expect(jobs.row(f)).toMatchObject({ state: 'failed', error: 'The server went away.' });
    expect(transfer(`test-${f}`)).toMatchObject({ state: 'failed', actions: ['retry'] });
    expect(calls).not.toContain(`discard ${f}`);
  });

  it('says which job was not found', () => {
    expect(() => runner().jobs.row(999_999)).toThrow('Download 999999 was not found.');
  });
});
