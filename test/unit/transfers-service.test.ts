// The transfers service's states and actions (docs/uploads.md: pause, resume, cancel, retry,
// "clear finished"), the rule that announces the end of a long transfer, and the desktop
// announcer that shows it only while no window has the focus. (The real uploads and downloads
// behind these are in test/transfers/pause-resume.test.ts.)
import { describe, expect, it } from 'vitest';
import type { Transfer } from '../../src-main/contract';
import { transferNotice } from '../../src-main/contract/transfers';
import { announceLongTransfers } from '../../src-main/electron/notifications';
import { EventBus } from '../../src-main/services/events';
import { SETTING_NOTIFY_AFTER_SECONDS } from '../../src-main/services/settings-keys';
import { TransfersService, pausedBy, type TransferControls } from '../../src-main/services/transfers';

const init = { direction: 'upload' as const, name: 'a.bin', account: 1, target: 'root', bytesTotal: 100 };

function controlled() {
  const calls: string[] = [];
  const controls: TransferControls = { pausable: true, resume: () => calls.push('resume'), discard: async () => void calls.push('discard') };
  return { calls, controls };
}

describe('TransfersService', () => {
  it('offers the actions of each state, and pause aborts the attempt with a pause reason', () => {
    const s = new TransfersService(new EventBus());
    const { calls, controls } = controlled();
    const { transfer, signal } = s.start(init, { id: 'upload-1', controls });
    expect(transfer.actions).toEqual(['pause', 'cancel']);
    s.progress('upload-1', 40);
    s.pause('upload-1');
    expect(pausedBy(signal)).toBe(true);
    s.finish('upload-1', signal.reason);
    expect(s.list()[0]).toMatchObject({ state: 'paused', bytesDone: 40, finishedAt: null, error: null, actions: ['resume', 'cancel'], speed: 0 });
    expect(() => s.retry('upload-1')).toThrow(/Only a failed/);
    s.resume('upload-1');
    expect(calls).toEqual(['resume']);
    // The owner continues under the same id; what it kept is set, not counted as speed.
    s.start(init, { id: 'upload-1' });
    s.setDone('upload-1', 40);
    expect(s.list()).toHaveLength(1);
    expect(s.list()[0]).toMatchObject({ state: 'running', bytesDone: 40, speed: 0, actions: ['pause', 'cancel'] });
    expect(() => s.start(init, { id: 'upload-1' })).toThrow(/already running/);
    s.finish('upload-1', new Error('disk on fire'));
    expect(s.list()[0]).toMatchObject({ state: 'failed', error: 'disk on fire', actions: ['retry'] });
    s.retry('upload-1');
    expect(calls).toEqual(['resume', 'resume']);
  });

  it('cancelling a paused transfer discards what it kept; a transfer without controls offers cancel only', async () => {
    const s = new TransfersService(new EventBus());
    const { calls, controls } = controlled();
    const { signal } = s.start(init, { id: 'd', controls });
    s.pause('d');
    s.finish('d', signal.reason);
    await s.cancel('d');
    expect(calls).toEqual(['discard']);
    expect(s.list()[0]).toMatchObject({ state: 'cancelled', actions: [] });
    await expect(s.cancel('d')).rejects.toThrow(/already ended/);

    const plain = s.start({ ...init, direction: 'copy' });
    expect(plain.transfer.actions).toEqual(['cancel']);
    expect(() => s.pause(plain.transfer.id)).toThrow(/cannot be paused/);
    await s.cancel(plain.transfer.id);
    s.finish(plain.transfer.id, plain.signal.reason);
    expect(s.list().find((t) => t.id === plain.transfer.id)).toMatchObject({ state: 'cancelled', error: null });
    expect(() => s.pause('nope')).toThrow(/No transfer/);
  });

  it('clear finished keeps running and paused transfers and drops a failed one\'s leftovers', async () => {
    const s = new TransfersService(new EventBus());
    const { calls, controls } = controlled();
    s.start(init, { id: 'running', controls });
    const p = s.start(init, { id: 'paused', controls });
    s.pause('paused');
    s.finish('paused', p.signal.reason);
    s.start(init, { id: 'failed', controls });
    s.finish('failed', new Error('x'));
    s.start(init, { id: 'done' });
    s.finish('done');
    s.clearFinished();
    await Promise.resolve();
    expect(s.list().map((t) => t.id).sort()).toEqual(['paused', 'running']);
    expect(calls).toEqual(['discard']);
  });

  it('measures speed over recent progress', async () => {
    const s = new TransfersService(new EventBus());
    s.start(init, { id: 'x' });
    s.progress('x', 10);
    await new Promise((r) => setTimeout(r, 220));
    s.progress('x', 1000);
    const speed = s.list()[0].speed;
    // 1000 bytes in at least 220 ms: at most ~4.5 kB/s, and clearly not zero.
    expect(speed).toBeGreaterThan(1000);
    expect(speed).toBeLessThan(1000 / 0.2);
  });
});

describe('the end of a long transfer is announced', () => {
  const ended = (over: Partial<Transfer>): Transfer => ({
    id: 't', direction: 'download', name: 'film.mkv', account: 1, target: 'x', bytesDone: 3 * 1024 ** 3, bytesTotal: 3 * 1024 ** 3,
    state: 'done', error: null, startedAt: '2026-11-21T10:00:00.000Z', finishedAt: '2026-11-21T10:02:05.000Z', speed: 0, actions: [], savedAs: null, ...over,
  });

  it('words done and failed endings, and stays quiet for short, cancelled or unfinished ones', () => {
    expect(transferNotice(ended({}), 10)).toEqual({ title: 'Download finished', body: 'film.mkv (3.0 GB) in 2 min 5 s' });
    expect(transferNotice(ended({ state: 'failed', error: 'The SFTP server is not reachable.' }), 10)).toEqual({ title: 'Download failed', body: 'film.mkv: The SFTP server is not reachable.' });
    expect(transferNotice(ended({ finishedAt: '2026-11-21T10:00:04.000Z' }), 10)).toBeNull();
    expect(transferNotice(ended({ state: 'cancelled' }), 10)).toBeNull();
    expect(transferNotice(ended({ state: 'paused', finishedAt: null }), 0)).toBeNull();
    expect(transferNotice(ended({}), null)).toBeNull();
  });

  it('the desktop announcer shows it once, only while no window has the focus, per the setting', () => {
    const events = new EventBus();
    const values = new Map<string, unknown>();
    const settings = { get: <T>(k: string, fallback: T) => (values.has(k) ? (values.get(k) as T) : fallback) };
    let focused = false;
    const shown: string[] = [];
    const stop = announceLongTransfers({ events, settings } as never, { isFocused: () => focused, show: (n) => shown.push(n.title) });
    events.emit('transfers.updated', ended({ finishedAt: null, state: 'running' }));
    events.emit('transfers.updated', ended({}));
    events.emit('transfers.updated', ended({}));
    expect(shown).toEqual(['Download finished']);
    focused = true;
    events.emit('transfers.updated', ended({ id: 'u', direction: 'upload' }));
    expect(shown).toHaveLength(1);
    focused = false;
    values.set(SETTING_NOTIFY_AFTER_SECONDS, null);
    events.emit('transfers.updated', ended({ id: 'v' }));
    expect(shown).toHaveLength(1);
    values.set(SETTING_NOTIFY_AFTER_SECONDS, 0);
    events.emit('transfers.updated', ended({ id: 'w', state: 'failed', error: 'x' }));
    expect(shown).toEqual(['Download finished', 'Download failed']);
    stop();
  });
});
