/**
 * Command-line and environment options of `serve` (flags win over environment variables).
 */
import { parseArgs } from 'node:util';
import { defaultDataDir } from './app';

export interface ServeOptions {
  host: string;
  port: number;
  dataDir: string;
  localFolder?: string;
  apiKey?: string;
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
  return {
    host: values.host ?? env.TRIBUTARY_HOST ?? '127.0.0.1',
    port,
    dataDir: values['data-dir'] ?? env.TRIBUTARY_DATA_DIR ?? defaultDataDir(),
    localFolder: values['local-folder'] ?? env.TRIBUTARY_LOCAL_FOLDER,
    apiKey: values['api-key'] ?? env.TRIBUTARY_API_KEY,
  };
}

export const USAGE = `Usage: npm run serve -- [options]   (or: node out/main/serve.js [options])

  --port N           port of the web UI and REST API (TRIBUTARY_PORT; default ${DEFAULT_PORT}; 0 = any free port)
  --host ADDR        address to bind (TRIBUTARY_HOST; default 127.0.0.1)
  --data-dir DIR     all state: database, keys, caches (TRIBUTARY_DATA_DIR; default the per-user app data folder)
  --local-folder DIR folder of the first-run local account (TRIBUTARY_LOCAL_FOLDER; default ~/Tributary)
  --api-key KEY      make sure this REST API key exists and is active (TRIBUTARY_API_KEY)

       npm run serve -- keys list | create NAME | revoke ID  [--data-dir DIR]
                     manage REST API keys (the same keys as Settings)
`;
