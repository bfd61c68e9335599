/**
 * Every curl example in README.md and docs/rest.md (```sh blocks that start with `curl`) runs
 * against a live server and must exit 0 with the status written under it (`# → 201`).
 * Variables: $TRIBUTARY, $API_KEY, $ACCOUNT, $TOKEN, $FOLDER, $FILE, $IMAGE, $LOCAL_DIR; each
 * example gets a fresh account holding docs/notes.txt and photo.png.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBinary } from '../servers/util';
import { importMemory, startRest, type RestServer } from './harness';

const ROOT = join(import.meta.dirname, '..', '..');

interface Example {
  file: string;
  command: string;
  status: number;
}

function examples(file: string): Example[] {
  const path = join(ROOT, file);
  if (!existsSync(path)) return [];
  const out: Example[] = [];
  for (const m of readFileSync(path, 'utf8').matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = m[1]!.split('\n');
    if (!lines.find((l) => l.trim())?.trim().startsWith('curl')) continue;
    const expected = lines.map((l) => /^#\s*→\s*(\d{3})\s*$/.exec(l.trim())).find(Boolean);
    if (!expected) throw new Error(`${file}: a curl example has no "# → status" line:\n${m[1]}`);
    out.push({ file, command: lines.filter((l) => !l.trim().startsWith('#')).join('\n'), status: Number(expected[1]) });
  }
  return out;
}

const ALL = [...examples('README.md'), ...examples('docs/rest.md')];

function run(args: string[], options: { cwd: string; env: Record<string, string | undefined> }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const WRAPPER = `curl() {
  local has_o=0
  for a in "$@"; do [ "$a" = "-o" ] && has_o=1; done
  if [ $has_o = 1 ]; then command curl -sS -w '%{http_code}' "$@"; else command curl -sS -o "$OUT" -w '%{http_code}' "$@"; fi
}
`;

describe('documented curl examples (README.md, docs/rest.md)', () => {
  let s: RestServer;
  let n = 0;
  beforeAll(async () => {
    s = await startRest();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('finds the examples and curl is installed', () => {
    expect(hasBinary('/usr/bin/curl'), 'curl (Debian package curl) is required').toBe(true);
    expect(ALL.length).toBeGreaterThanOrEqual(20);
  });

  it.each(ALL.map((e, i) => [i + 1, e.file, e.status, e.command.split('\n')[0]!.slice(0, 90), e] as const))(
    'example %i in %s answers %i: %s',
    async (_i, _file, _status, _title, example) => {
      n++;
      const acc = await importMemory(s, `curl-${n}`);
      const storage = s.app.storage;
      const folder = await storage.mkdir(acc.id, 'root', 'docs');
      const file = await storage.upload(acc.id, folder.id, 'notes.txt', Readable.from([Buffer.from('some notes\n')]));
      const png = await sharp({ create: { width: 80, height: 40, channels: 3, background: '#3366cc' } }).png().toBuffer();
      const image = await storage.upload(acc.id, 'root', 'photo.png', Readable.from([png]));
      const work = mkdtempSync(join(s.dir, 'curl-'));
      const localDir = join(work, 'import-me');
      mkdirSync(localDir);
      // Asynchronous: the server runs in this very process.
      const r = await run(['--norc', '--noprofile', '-c', `${WRAPPER}\n${example.command}`], {
        cwd: work,
        env: {
          HOME: work,
          PATH: process.env.PATH,
          OUT: join(work, 'body'),
          TRIBUTARY: s.url,
          API_KEY: s.apiKey,
          ACCOUNT: String(acc.id),
          TOKEN: acc.token,
          FOLDER: folder.id,
          FILE: file.id,
          IMAGE: image.id,
          LOCAL_DIR: localDir,
        },
      });
      const body = existsSync(join(work, 'body')) ? readFileSync(join(work, 'body'), 'utf8').slice(0, 500) : '';
      expect(r.status, `exit ${r.status}: ${r.stderr}`).toBe(0);
      expect(Number(r.stdout.trim()), `${example.command}\n→ ${r.stdout} ${body}`).toBe(example.status);
    },
  );
});
