/**
 * The date a cached message is listed and paged by (spec 2, Message `created`; "List messages"
 * `after`/`before`): the Date header, else the server's INTERNALDATE, else the time the message
 * is first seen. Never NaN: a message with neither date must still be stored and listed.
 */
import { describe, expect, it } from 'vitest';
import { headerOf, messageDateMs } from '../../src-main/mail/sync';

const SEEN = Date.UTC(2026, 4, 1, 12, 0, 0);

describe('the date of a message (spec 2, Message created)', () => {
  it('is the Date header when it parses', () => {
    expect(messageDateMs(new Date('2026-03-02T10:00:00Z'), new Date('2026-03-03T00:00:00Z'), SEEN)).toBe(Date.UTC(2026, 2, 2, 10));
  });

  it('is INTERNALDATE without a usable Date header (as a Date, or as the text imapflow hands over)', () => {
    expect(messageDateMs(undefined, new Date('2026-03-03T00:00:00Z'), SEEN)).toBe(Date.UTC(2026, 2, 3));
    expect(messageDateMs(new Date('garbage'), '03-Mar-2026 00:00:00 +0000', SEEN)).toBe(Date.UTC(2026, 2, 3));
  });

  it('is the time first seen when neither parses', () => {
    expect(messageDateMs(undefined, '31-Foo-2026 99:99:99 +0000', SEEN)).toBe(SEEN);
    expect(messageDateMs(new Date('garbage'), undefined, SEEN)).toBe(SEEN);
    expect(messageDateMs(null, '', SEEN)).toBe(SEEN);
  });

  it('a header with no Date and an INTERNALDATE that does not parse gets a finite date', () => {
    const h = headerOf('INBOX', { uid: 5, seq: 5, internalDate: '31-Foo-2026 99:99:99 +0000', envelope: { subject: 'x' }, flags: new Set<string>(), size: 10 } as never);
    expect(Number.isFinite(h.dateMs)).toBe(true);
  });
});
