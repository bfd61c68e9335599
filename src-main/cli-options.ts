/**
 * Command-line and environment options of `serve` (flags win over environment variables).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { defaultDataDir } from './app';

export interface ServeOptions {
  host: string;
  port: number;
  /** False when the port is the default: a taken default port falls back to any free one. */
  portGiven: boolean;
  dataDir: string;
  localFolder?: string;
  apiKey?: string;
  /** Things the user should know about the options given (printed to stderr). */
  warnings: string[];
}

export const DEFAULT_PORT = 7780;

export function parseServeOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'local-folder': { type: 'string' },
      'api-key': { type: 'string' },
      'api-key-file': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const portText = values.port ?? env.TRIBUTARY_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0–65535, not "${portText}"`);
  const warnings: string[] = [];
  if (values['api-key'] !== undefined) {
    warnings.push('Warning: --api-key is visible to other users of this machine (ps, /proc); use TRIBUTARY_API_KEY or --api-key-file FILE.');
  }
  if (values['api-key'] !== undefined && values['api-key-file'] !== undefined) throw new Error('Give --api-key or --api-key-file, not both.');
  const apiKey = values['api-key-file'] !== undefined ? readKeyFile(values['api-key-file']) : (values['api-key'] ?? env.TRIBUTARY_API_KEY);
  return {
    host: values.host ?? env.TRIBUTARY_HOST ?? '127.0.0.1',
    port,
    portGiven: values.port !== undefined || env.TRIBUTARY_PORT !== undefined,
    dataDir: values['data-dir'] ?? env.TRIBUTARY_DATA_DIR ?? defaultDataDir(),
    localFolder: values['local-folder'] ?? env.TRIBUTARY_LOCAL_FOLDER,
    apiKey,
    warnings,
  };
}

/** The key in FILE: its first line, without the line ending. */
function readKeyFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`--api-key-file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  const key = text.split(/\r?\n/)[0]!;
  if (!key) throw new Error(`--api-key-file: ${file} is empty`);
  return key;
}

export const USAGE = `Usage: npm run serve -- [options]   (or: node out/main/serve.js [options])

  --port N           port of the web UI and REST API (TRIBUTARY_PORT; default ${DEFAULT_PORT}; 0 = any free port)
  --host ADDR        address to bind (TRIBUTARY_HOST; default 127.0.0.1)
  --data-dir DIR     all state: database, keys, caches (TRIBUTARY_DATA_DIR; default the per-user app data folder)
  --local-folder DIR folder of the first-run local account (TRIBUTARY_LOCAL_FOLDER; default ~/Tributary)
  --api-key-file FILE make sure the REST API key in FILE (its first line) exists and is active
  --api-key KEY      the same, with the key itself (TRIBUTARY_API_KEY; prefer the variable or
                     --api-key-file: a command line is visible to other users)

       npm run serve -- keys list | create NAME | revoke ID  [--data-dir DIR]
                     manage REST API keys (the same keys as Settings)
       npm run serve -- ui-token rotate  [--data-dir DIR]
                     a new web UI link: the old token is refused from now on
`;
