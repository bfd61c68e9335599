// The rules every connector shares, each written once in src-main/connectors/shared/ (and the
// multipart minimum in src-main/contract/limits.ts): which failures mean "the server cannot
// be reached", the temporary-name rule, multipart plans, and no connector leaning on another's
// folder (architecture: "a connector is one folder").
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MULTIPART_MIN_SIZE } from '../../src-main/contract/limits';
import { azureError } from '../../src-main/connectors/azure';
import { mailError } from '../../src-main/connectors/imap/connector';
import { s3Error } from '../../src-main/connectors/s3';
import { mapError as sftpError } from '../../src-main/connectors/sftp/errors';
import { isUnreachable } from '../../src-main/connectors/shared/net-errors';
import { MAX_PARTS, MiB, partSizeFor } from '../../src-main/connectors/shared/parts';
import { TEMP_NAME, tempName } from '../../src-main/connectors/shared/paths';

const CONNECTORS = join(__dirname, '../../src-main/connectors');

describe('unreachable servers (spec 1, Errors: service_not_available)', () => {
  const errnos = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'];

  it('one list of codes, with a library\'s own codes only where it passes them', () => {
    for (const code of errnos) expect(isUnreachable(code), code).toBe(true);
    expect(isUnreachable('UND_ERR_SOCKET')).toBe(true);
    expect(isUnreachable('EACCES')).toBe(false);
    expect(isUnreachable(undefined)).toBe(false);
    expect(isUnreachable(2)).toBe(false);
    expect(isUnreachable('ESOCKET')).toBe(false);
    expect(isUnreachable('ESOCKET', ['ESOCKET'])).toBe(true);
  });

  it('every connector maps each of them to service_not_available', () => {
    for (const code of errnos) {
      expect(s3Error(Object.assign(new Error(`connect ${code}`), { code }), 'x', 'bucket').code, `s3 ${code}`).toBe('service_not_available');
      expect(azureError(Object.assign(new Error(`connect ${code}`), { code }), 'x', 'container').code, `azure ${code}`).toBe('service_not_available');
      expect(mailError(Object.assign(new Error(`connect ${code}`), { code }), 'IMAP').code, `mail ${code}`).toBe('service_not_available');
      // ssh2 keeps the code in the message only.
      expect(sftpError(new Error(`getaddrinfo ${code} files.example.org`), 'x').code, `sftp ${code}`).toBe('service_not_available');
    }
    expect(mailError(Object.assign(new Error('socket'), { code: 'ESOCKET' }), 'SMTP').code).toBe('service_not_available');
    expect(mailError(Object.assign(new Error('denied'), { code: 'EACCES' }), 'IMAP').code).toBe('upstream_error');
  });
});

describe('temporary names', () => {
  it('hides what the writers create, and the local connector\'s older .tmp files', () => {
    expect(tempName()).toMatch(TEMP_NAME);
    expect(tempName('upload')).toMatch(TEMP_NAME);
    expect(tempName('upload')).toMatch(/\.upload$/);
    expect('.tributary-0123456789abcdef.tmp').toMatch(TEMP_NAME);
    for (const name of ['report.part', '.tributary-xyz.part', '.tributary-0123456789ab.txt', 'a.tributary-0123456789ab.part']) expect(name).not.toMatch(TEMP_NAME);
  });
});

describe('multipart plans (document 1, Limits: multipart for files larger than 5MB)', () => {
  it('never go below the multipart minimum nor above 10,000 parts', () => {
    expect(MULTIPART_MIN_SIZE).toBe(5 * MiB);
    expect(partSizeFor(1)).toBe(8 * MiB);
    expect(partSizeFor(1, MULTIPART_MIN_SIZE)).toBe(MULTIPART_MIN_SIZE);
    expect(partSizeFor(1, 1)).toBe(MULTIPART_MIN_SIZE);
    const huge = 200 * 1024 * MiB;
    const part = partSizeFor(huge);
    expect(part % MiB).toBe(0);
    expect(Math.ceil(huge / part)).toBeLessThanOrEqual(MAX_PARTS);
    expect(Math.ceil(huge / (part - MiB))).toBeGreaterThan(MAX_PARTS);
  });
});

describe('connector folders', () => {
  it('import nothing from another connector\'s folder', () => {
    const folders = readdirSync(CONNECTORS).filter((f) => statSync(join(CONNECTORS, f)).isDirectory() && f !== 'shared');
    const crossings: string[] = [];
    for (const folder of folders) {
      for (const file of readdirSync(join(CONNECTORS, folder)).filter((f) => f.endsWith('.ts'))) {
        const text = readFileSync(join(CONNECTORS, folder, file), 'utf8');
        for (const m of text.matchAll(/from '\.\.\/([^'/]+)/g)) {
          if (folders.includes(m[1]!) && m[1] !== folder) crossings.push(`${folder}/${file} → ${m[1]}`);
        }
      }
    }
    expect(crossings).toEqual([]);
  });
});
