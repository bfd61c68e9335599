// The tray icon's status, menu and actions (src-main/electron/tray-status.ts), driven by the
// real transfers service and its `transfers.updated` events.
import { describe, expect, it } from 'vitest';
import { closeHidesToTray, panelIsDark, pauseAll, resumeAll, trayIconFile, trayMenu, trayStatus, watchTrayStatus, type TrayStatus } from '../../src-main/electron/tray-status';
import { EventBus } from '../../src-main/services/events';
import { TransfersService, pausedBy, type TransferControls } from '../../src-main/services/transfers';

function setup() {
  const events = new EventBus();
  const transfers = new TransfersService(events);
  const shown: TrayStatus[] = [];
  const watch = watchTrayStatus({ events, transfers }, (s) => shown.push(s));
  return { transfers, shown, watch };
}

/** An owner that can pause and continue: resuming starts the same transfer again. */
function pausableUpload(transfers: TransfersService, name: string, bytesTotal: number) {
  const init = { direction: 'upload' as const, name, account: 1, target: 'root', bytesTotal };
  const controls: TransferControls = {
    pausable: true,
    resume: () => attempt(),
    discard: async () => {},
  };
  let id = '';
  const attempt = () => {
    const { transfer, signal } = transfers.start(init, { id: id || undefined, controls });
    id = transfer.id;
    signal.addEventListener('abort', () => transfers.finish(id, pausedBy(signal) ? signal.reason : new Error('cancelled')));
  };
  attempt();
  return id;
}

const actions = (s: TrayStatus) => trayMenu(s).flatMap((i) => (i.type === 'item' && i.action ? [[i.action, i.enabled] as const] : []));

describe('tray status', () => {
  it('is idle with no transfers, and the menu offers Open and Quit but no pausing', () => {
    const { shown } = setup();
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({ state: 'idle', moving: 0, summary: 'No transfers running', tooltip: 'Tributary — No transfers running' });
    expect(actions(shown[0])).toEqual([
      ['open', true],
      ['pauseAll', false],
      ['quit', true],
    ]);
  });

  it('is busy while files move, with their count and progress, and Pause all pauses them', () => {
    const { transfers, shown } = setup();
    const a = pausableUpload(transfers, 'a.bin', 1000);
    pausableUpload(transfers, 'b.bin', 1000);
    transfers.setDone(a, 1000);
    const busy = shown.at(-1)!;
    expect(busy).toMatchObject({ state: 'busy', moving: 2, pausable: 2, percent: 50, summary: 'Moving 2 files (50%)' });
    expect(actions(busy)).toContainEqual(['pauseAll', true]);

    expect(pauseAll(transfers)).toBe(2);
    expect(transfers.list().map((t) => t.state)).toEqual(['paused', 'paused']);
    const paused = shown.at(-1)!;
    expect(paused).toMatchObject({ state: 'idle', moving: 0, paused: 2, summary: '2 paused' });
    expect(actions(paused)).toEqual([
      ['open', true],
      ['pauseAll', false],
      ['resumeAll', true],
      ['quit', true],
    ]);

    expect(resumeAll(transfers)).toBe(2);
    expect(shown.at(-1)).toMatchObject({ state: 'busy', moving: 2 });
  });

  it('shows an error while a failed transfer is listed, even with others moving, until it is cleared', () => {
    const { transfers, shown, watch } = setup();
    const failing = transfers.start({ direction: 'copy', name: 'c.txt', account: 1, target: 'root', bytesTotal: null });
    const { transfer: running } = transfers.start({ direction: 'copy', name: 'd.txt', account: 1, target: 'root', bytesTotal: null });
    transfers.finish(failing.transfer.id, new Error('disk full'));
    expect(shown.at(-1)).toMatchObject({ state: 'error', moving: 1, failed: 1, pausable: 0, percent: null, summary: 'Moving 1 file · 1 failed' });
    // A copy cannot be paused: Pause all is there but disabled.
    expect(actions(shown.at(-1)!)).toContainEqual(['pauseAll', false]);

    transfers.finish(running.id);
    transfers.clearFinished(); // sends no event: the tray recomputes when asked
    watch.refresh();
    expect(shown.at(-1)).toMatchObject({ state: 'idle', failed: 0 });
  });

  it('calls show only when what the tray shows changes, and stops with stop()', () => {
    const { transfers, shown, watch } = setup();
    const id = pausableUpload(transfers, 'big.bin', 1000);
    const before = shown.length;
    transfers.setDone(id, 10); // 1%: still "0%" in steps of 5
    transfers.setDone(id, 20);
    watch.refresh();
    expect(shown.length).toBe(before);
    transfers.setDone(id, 600);
    expect(shown.at(-1)!.summary).toBe('Moving 1 file (60%)');
    watch.stop();
    transfers.finish(id);
    expect(shown.at(-1)!.state).toBe('busy');
  });
});

describe('tray icon and closing', () => {
  it('uses macOS template images, and the panel-coloured glyph elsewhere', () => {
    expect(trayIconFile('busy', 'darwin', true)).toBe('busyTemplate.png');
    expect(trayIconFile('error', 'win32', true)).toBe('error-dark.png');
    expect(trayIconFile('idle', 'win32', false)).toBe('idle-light.png');
    expect(trayIconFile('idle', 'linux', true)).toBe('idle-dark-32.png');
  });

  it('picks the panel colour: Windows by the system mode, GNOME always dark, KDE by its theme', () => {
    expect(panelIsDark('win32', { systemDark: false, themeDark: true, desktop: undefined })).toBe(false);
    expect(panelIsDark('win32', { systemDark: true, themeDark: false, desktop: undefined })).toBe(true);
    expect(panelIsDark('linux', { systemDark: false, themeDark: false, desktop: 'ubuntu:GNOME' })).toBe(true);
    expect(panelIsDark('linux', { systemDark: false, themeDark: false, desktop: 'KDE' })).toBe(false);
    expect(panelIsDark('linux', { systemDark: false, themeDark: true, desktop: 'KDE' })).toBe(true);
  });

  it('hides the window to the tray on Windows and Linux, not on macOS', () => {
    expect(closeHidesToTray('win32')).toBe(true);
    expect(closeHidesToTray('linux')).toBe(true);
    expect(closeHidesToTray('darwin')).toBe(false);
  });

  it('every icon file it names exists in resources/tray', async () => {
    const { existsSync } = await import('node:fs');
    const { join } = await import('node:path');
    for (const state of ['idle', 'busy', 'error'] as const) {
      for (const platform of ['darwin', 'win32', 'linux'] as const) {
        for (const dark of [true, false]) {
          const file = join(import.meta.dirname, '../../resources/tray', trayIconFile(state, platform, dark));
          expect(existsSync(file), file).toBe(true);
        }
      }
    }
  });

  it('the status of a transfer list alone', () => {
    expect(trayStatus([{ state: 'queued', actions: ['cancel'], bytesDone: 0, bytesTotal: 200 }])).toMatchObject({ state: 'busy', moving: 1, pausable: 0, percent: 0 });
  });
});
