/**
 * spec 1 (Accounts, Account keys, Files, Folders, Links, Legacy permissions, Errors) and
 * spec 3 (Versioning): every route in v0, v1 and v2 against each backend, compared with the
 * committed golden JSON (set UPDATE_GOLDEN=1 to rewrite it after a deliberate change).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VERSIONS } from '../../src-main/rest/http';
import { runGolden } from './golden';
import { importMemory, isErrorBody, startRest, type RestServer } from './harness';


const GOLDEN_DIR = join(import.meta.dirname, 'golden');

const BACKENDS: { name: string; importAccount(s: RestServer, tag: string): Promise<{ id: number; token: string }> }[] = [
  { name: 'memory', importAccount: (s, tag) => importMemory(s, `golden-${tag}`) },
  // `local` joins once its write() resolves (it hangs in pipeline() today; see the report).
];

describe.each(BACKENDS)('REST golden ($name)', (backend) => {
  let server: RestServer | undefined;
  // A fresh server per version, so account ids and names are the same on every run.
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it.each(VERSIONS)('spec 3 Versioning: every route in %s matches its golden JSON', async (version) => {
    const s = (server = await startRest());
    const recorded = await runGolden({ server: s, version, importAccount: () => backend.importAccount(s, version) }, (step, res) => {
      expect(res.status, `${step.name} (${step.method} ${step.path.slice(0, 120)}): ${res.text.slice(0, 300)}`).toBe(step.status);
      if (res.status === 204) expect(res.text).toBe('');
      if (res.status >= 400 && !step.path.startsWith('/l/')) {
        expect(res.headers['content-type']).toBe('application/json');
        expect(isErrorBody(res.json, res.status), res.text).toBe(true);
      }
    });
    const file = join(GOLDEN_DIR, `${backend.name}-${version}.json`);
    const text = `${JSON.stringify(recorded, null, 2)}\n`;
    if (!existsSync(file) || process.env.UPDATE_GOLDEN) {
      mkdirSync(GOLDEN_DIR, { recursive: true });
      writeFileSync(file, text);
    }
    expect(recorded).toEqual(JSON.parse(readFileSync(file, 'utf8')));
  });
});
