/**
 * Handing memory back after a burst of garbage (src-main/memory.ts): its timers do not keep the
 * process alive, and what nothing refers to any more is collected.
 */
import { describe, expect, it } from 'vitest';
import { handMemoryBackSoon } from '../../src-main/memory';
import { until } from '../servers/util';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('handMemoryBackSoon', () => {
  it('does not keep the process alive', () => {
    const before = timers();
    handMemoryBackSoon();
    expect(timers()).toBe(before);
  });

  it('collects what nothing refers to any more', async () => {
    let garbage: object | undefined = { big: Array.from({ length: 1000 }, () => 'x') };
    const ref = new WeakRef(garbage);
    garbage = undefined;
    // A WeakRef's target lives at least to the end of the task that made it.
    await new Promise((r) => setTimeout(r, 0));
    handMemoryBackSoon();
    await until(() => (ref.deref() === undefined ? true : undefined), 20_000, 'the object collected');
  });
});
