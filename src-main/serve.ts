/**
 * Headless composition root: the same services as the desktop app, the REST API and the web
 * UI on one local port, no Electron. Prints the UI URL on one line; stops cleanly on
 * SIGINT/SIGTERM.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApp } from './app';
import { parseServeOptions } from './cli-options';
import { startLocalServer } from './server/local';

async function main(): Promise<void> {
  const options = parseServeOptions(process.argv.slice(2));
  const app = await createApp({ dataDir: options.dataDir, defaultLocalFolder: options.localFolder });
  if (options.apiKey) app.apiKeys.ensure(options.apiKey);
  const here = dirname(fileURLToPath(import.meta.url));
  const http = await startLocalServer(app, { host: options.host, port: options.port, rendererDir: join(here, '../renderer') });
  if (!['127.0.0.1', 'localhost', '::1'].includes(options.host)) {
    console.warn(`Warning: listening on ${options.host}; anyone who can reach it and knows a key can use your accounts.`);
  }
  console.log(`Tributary is running at ${http.uiUrl}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`Received ${signal}, shutting down.`);
    const force = setTimeout(() => process.exit(1), 10_000).unref();
    await http.close();
    await app.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((e) => {
  console.error(`Tributary could not start: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
});
