/**
 * Handing memory back after a burst of garbage (src-main/memory.ts): its timers do not keep the
 * process alive, and once they have run, what nothing refers to any more has been collected.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

/** The module afresh: it asks once per burst, so each test starts with nothing asked. */
async function fresh() {
  vi.resetModules();
  return (await import('../../src-main/memory')).handMemoryBackSoon;
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
/** The next turn of the event loop (not a timer, so fake timers leave it alone). */
const nextTurn = () => new Promise((r) => setImmediate(r));

describe('handMemoryBackSoon', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('does not keep the process alive', async () => {
    const handMemoryBackSoon = await fresh();
    const before = timers();
    handMemoryBackSoon();
    expect(timers()).toBe(before);
  });

  it('collects what nothing refers to once its timers have run, and can be asked again after', async () => {
    const handMemoryBackSoon = await fresh();
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    for (let round = 0; round < 2; round++) {
      let garbage: object | undefined = { big: Array.from({ length: 1000 }, () => 'x') };
      const ref = new WeakRef(garbage);
      garbage = undefined;
      // A WeakRef's target lives at least to the end of the turn that made it.
      await nextTurn();
      handMemoryBackSoon();
      // No real time passes: only the collections the timers make can free the object now.
      vi.advanceTimersByTime(10_000);
      await nextTurn();
      expect(ref.deref()).toBeUndefined();
    }
  });
});
