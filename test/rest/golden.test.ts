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
import { startApache } from '../servers/apache';
import { importLocal, importMemory, isErrorBody, startRest, type RestServer } from './harness';


const GOLDEN_DIR = join(import.meta.dirname, 'golden');

interface Backend {
  name: string;
  /** Starts what the backend needs (a server) and returns how to import an account of it. */
  start(): Promise<{ importAccount(s: RestServer, tag: string): Promise<{ id: number; token: string }>; stop(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  { name: 'memory', start: async () => ({ importAccount: (s, tag) => importMemory(s, `golden-${tag}`), stop: async () => {} }) },
  { name: 'local', start: async () => ({ importAccount: (s, tag) => importLocal(s, `golden-${tag}`), stop: async () => {} }) },
  {
    // Apache httpd + mod_dav_fs (test/servers/apache.ts), imported with spec 1's WebDAV parameters.
    name: 'webdav',
    start: async () => {
      const apache = await startApache();
      return {
        async importAccount(s) {
          const res = await s.call('POST', '/v2/accounts', {
            body: { service: 'webdav', account: apache.user, token: apache.password, protocol: 'http', host: apache.host, port: String(apache.port), path: '/' },
          });
          if (res.status !== 201) throw new Error(`import webdav failed: ${res.status} ${res.text}`);
          return { id: res.json.id, token: res.json.bearer_token.key };
        },
        stop: () => apache.stop(),
      };
    },
  },
];

describe.each(BACKENDS)('REST golden ($name)', (backend) => {
  let server: RestServer | undefined;
  let backendStop: (() => Promise<void>) | undefined;
  // A fresh server (and backend) per version, so ids, names and contents are the same every run.
  afterEach(async () => {
    await server?.stop();
    await backendStop?.();
    server = undefined;
    backendStop = undefined;
  });

  it.each(VERSIONS)('spec 3 Versioning: every route in %s matches its golden JSON', async (version) => {
    const s = (server = await startRest());
    const started = await backend.start();
    backendStop = started.stop;
    const recorded = await runGolden({ server: s, version, importAccount: () => started.importAccount(s, version) }, (step, res) => {
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
    expect(JSON.parse(text)).toEqual(JSON.parse(readFileSync(file, 'utf8')));
  });
});
