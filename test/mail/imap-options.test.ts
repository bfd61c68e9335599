// The `imap` connector's options and import mapping (spec 1 "Import an account", service imap).
import { describe, expect, it } from 'vitest';
import imap from '../../src-main/connectors/imap';
import { parseOptions, secretFields } from '../../src-main/connectors/registry';
import type { ConnectorDefinition } from '../../src-main/connectors/types';
import { parsePageSize, parseDate, ftsQuery } from '../../src-main/mail/messages';

describe('imap connector definition', () => {
  const def = imap as unknown as ConnectorDefinition;
  it('is a mail connector whose secrets are the password and the access token', () => {
    expect(def).toMatchObject({ kind: 'mail', group: 'email' });
    expect(secretFields(def).sort()).toEqual(['accessToken', 'password']);
  });
  it('maps an import body: account→user, token→password, host, port, smtp_host, smtp_port, tls', () => {
    const o = parseOptions(def, def.fromImport({ account: 'ann@x.test', token: 'pw', host: 'imap.x.test', port: 143, smtp_host: 'smtp.x.test', smtp_port: '587', tls: 'starttls' }));
    expect(o).toMatchObject({ user: 'ann@x.test', password: 'pw', host: 'imap.x.test', port: 143, smtp_host: 'smtp.x.test', smtp_port: 587, tls: 'starttls' });
    expect(def.describe(o)).toBe('ann@x.test');
    expect(parseOptions(def, def.fromImport({ account: 'a', token: 'p', host: 'h', tls: true }))).toMatchObject({ tls: 'tls' });
  });
  it('needs a password or an access token', () => {
    expect(() => parseOptions(def, { host: 'h', user: 'u' })).toThrow(expect.objectContaining({ code: 'invalid_parameters' }));
    expect(parseOptions(def, { host: 'h', user: 'u', accessToken: 'tok' })).toMatchObject({ tls: 'tls' });
  });
});

describe('spec 2 parameter parsing', () => {
  it('page_size: default 100, 1 to 1000, integers only (spec 2 Limits)', () => {
    expect(parsePageSize(undefined)).toBe(100);
    expect(parsePageSize('1000')).toBe(1000);
    for (const bad of [0, 1001, '0', '1001', '1.5', 'ten', -1, 2.5]) expect(() => parsePageSize(bad)).toThrow(expect.objectContaining({ code: 'invalid_parameters' }));
  });
  it('after/before: ISO 8601 only', () => {
    expect(parseDate('2026-01-02T03:04:05Z', 'after')).toBe(Date.parse('2026-01-02T03:04:05Z'));
    expect(parseDate('2026-01-02', 'after')).toBe(Date.parse('2026-01-02'));
    for (const bad of ['yesterday', '2026-13-01', '01/02/2026', '2026-01-02T25:00:00Z', '1700000000']) expect(() => parseDate(bad, 'after')).toThrow(expect.objectContaining({ code: 'invalid_parameters' }));
  });
  it('search terms are quoted for FTS5; a trailing * is a prefix', () => {
    expect(ftsQuery('hello wor*')).toBe('"hello" "wor"*');
    expect(ftsQuery('a"b OR')).toBe('"a""b" "OR"');
  });
});
