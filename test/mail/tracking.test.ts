// Tracking tokens and handlers (spec 2 Send `tracking`; spec 3 email_open / email_click).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src-main/cache/db';
import { PIXEL, Tracker, instrumentHtml } from '../../src-main/mail/tracking';

describe('mail tracking', () => {
  const db = openDb(':memory:');
  const key = randomBytes(32);
  const seen: string[] = [];
  const tracker = new Tracker(db, key, (e) => seen.push(e.kind));

  it('tokens are signed: tampering, another key or a swapped URL are rejected (no open redirect)', () => {
    const t = tracker.token({ account: 3, messageId: '<a@b>', kind: 'click', url: 'https://example.org/x' });
    expect(tracker.verify(t)).toMatchObject({ account: 3, messageId: '<a@b>', kind: 'click', url: 'https://example.org/x' });
    const [payload, mac] = t.split('.');
    const evil = Buffer.from(JSON.stringify({ a: 3, m: '<a@b>', k: 'c', u: 'https://evil.test/' })).toString('base64url');
    expect(tracker.verify(`${evil}.${mac}`)).toBeNull();
    expect(tracker.verify(`${payload}.${mac!.slice(0, -2)}AA`)).toBeNull();
    expect(new Tracker(db, randomBytes(32)).verify(t)).toBeNull();
    expect(tracker.click('garbage')).toBeNull();
    expect(tracker.click(t)).toEqual({ status: 302, location: 'https://example.org/x' });
  });

  it('an open token cannot redirect, a click token records no open; a bad pixel token still gets the pixel', () => {
    const open = tracker.token({ account: 3, messageId: '<o@b>', kind: 'open' });
    expect(tracker.click(open)).toBeNull();
    const r = tracker.open('nope.nope');
    expect(r).toMatchObject({ status: 200, contentType: 'image/gif', recorded: false });
    expect(r.body.equals(PIXEL)).toBe(true);
  });

  it('repeated opens from one client within a minute collapse; other clients count', () => {
    const open = tracker.token({ account: 3, messageId: '<c@b>', kind: 'open', subscriptionId: 's' });
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const at = (ms: number) => new Date(t0 + ms);
    expect(tracker.open(open, { ip: '1.1.1.1', userAgent: 'A', at: at(0) }).recorded).toBe(true);
    expect(tracker.open(open, { ip: '1.1.1.1', userAgent: 'A', at: at(59_000) }).recorded).toBe(false);
    expect(tracker.open(open, { ip: '2.2.2.2', userAgent: 'B', at: at(59_500) }).recorded).toBe(true);
    expect(tracker.open(open, { ip: '1.1.1.1', userAgent: 'A', at: at(60_001) }).recorded).toBe(true);
    const events = tracker.events().filter((e) => e.messageId === '<c@b>');
    expect(events.map((e) => [e.kind, e.ip, e.subscriptionId])).toEqual([
      ['email_open', '1.1.1.1', 's'],
      ['email_open', '2.2.2.2', 's'],
      ['email_open', '1.1.1.1', 's'],
    ]);
    expect(seen.filter((k) => k === 'email_open')).toHaveLength(3);
  });

  it('instrumentHtml rewrites http(s) links and appends the pixel before </body>', () => {
    const html = instrumentHtml('<body><a href="https://a.test/?x=1&amp;y=2">a</a> <a href="mailto:z@z">m</a></body>', {
      base: 'https://t.test',
      clickToken: (u) => `C(${encodeURIComponent(u)})`,
      openToken: 'O',
    });
    expect(html).toContain('href="https://t.test/t/c/C(https%3A%2F%2Fa.test%2F%3Fx%3D1%26y%3D2)"');
    expect(html).toContain('href="mailto:z@z"');
    expect(html).toMatch(/<img src="https:\/\/t\.test\/t\/o\/O"[^>]*><\/body>$/);
  });
});
