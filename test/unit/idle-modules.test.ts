// docs/connectors.md, "The implementation is loaded on first use": `serve` with only its default
// local account, its first listing done, has loaded none of the other backends' SDKs nor the
// libraries of features not used yet. What is loaded is read off Node's own module loader in a
// child process.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../servers/util';

/** Packages of the other backends and of features used on demand (zip, webhooks, event buses, mail, thumbnails). */
const ON_DEMAND = [
  '@aws-sdk/client-s3',
  '@aws-sdk/lib-storage',
  '@aws-sdk/client-eventbridge',
  '@azure/storage-blob',
  'ssh2',
  'ssh2-sftp-client',
  'imapflow',
  'nodemailer',
  'mailparser',
  'undici',
  'saxes',
  'archiver',
  'sharp',
];

describe('serve idle', () => {
  it('loads no SDK or on-demand library with only a local account, and loads the AWS SDK when an S3 connector is made', () => {
    const folder = scratchDir('idle-modules-local');
    writeFileSync(join(folder, 'hello.txt'), 'hi');
    const r = spawnSync(process.execPath, ['scripts/run-ts.mjs', 'test/unit/fixtures/idle-app-child.ts', join(scratchDir('idle-modules'), 'data'), folder], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const { idle, afterS3 } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { idle: string[]; afterS3: string[] };
    // The observation sees what is loaded: the server's own packages at idle, the SDK once used.
    expect(idle).toEqual(expect.arrayContaining(['fastify', 'better-sqlite3']));
    expect(afterS3).toContain('@aws-sdk/client-s3');
    expect(idle.filter((name) => ON_DEMAND.includes(name))).toEqual([]);
  });
});
