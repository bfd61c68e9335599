/**
 * Headless composition root: the same services as the desktop app, the REST API and the web
 * UI on one local port, no Electron. Prints the UI URL on one line; stops cleanly on
 * SIGINT/SIGTERM, and on an uncaught exception (then with exit code 1).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApp } from './app';
import { parseServeOptions } from './cli-options';
import { installProcessGuard } from './process-guard';
import { localAccess } from './server/access';
import { startLocalServer } from './server/local';

/**
 * `serve keys list | create NAME | revoke ID [--data-dir DIR]`: manage REST API keys from a
 * terminal (the same keys as Settings). The secret of a new key is printed once.
 */
async function keys(args: string[]): Promise<void> {
  const firstOption = args.findIndex((a) => a.startsWith('--'));
  const [verb, arg] = firstOption === -1 ? args : args.slice(0, firstOption);
  const options = parseServeOptions(firstOption === -1 ? [] : args.slice(firstOption));
  const app = await createApp({ dataDir: options.dataDir, defaultLocalFolder: false });
  try {
    if (verb === 'list') {
      for (const k of app.apiKeys.list()) console.log(`${k.id}\t${k.active ? 'active ' : 'revoked'}\t${k.prefix}…\t${k.name}\tlast used ${k.lastUsed ?? 'never'}`);
    } else if (verb === 'create' && arg) {
      const { apiKey, key } = app.apiKeys.create(arg);
      console.log(`Created API key ${apiKey.id} "${apiKey.name}". Its secret is shown only now:\n${key}`);
    } else if (verb === 'revoke' && arg && /^\d+$/.test(arg)) {
      console.log(`Revoked API key ${app.apiKeys.revoke(Number(arg)).id}.`);
    } else {
      throw new Error('usage: serve keys list | create NAME | revoke ID  [--data-dir DIR]');
    }
  } finally {
    await app.close();
  }
}

/**
 * `serve ui-token rotate [--data-dir DIR]`: a new web UI token. The old one is refused at once,
 * also by a server running on this data folder (its open pages are disconnected).
 */
async function uiToken(args: string[]): Promise<void> {
  const firstOption = args.findIndex((a) => a.startsWith('--'));
  const [verb] = firstOption === -1 ? args : args.slice(0, firstOption);
  if (verb !== 'rotate') throw new Error('usage: serve ui-token rotate  [--data-dir DIR]');
  const options = parseServeOptions(firstOption === -1 ? [] : args.slice(firstOption));
  const app = await createApp({ dataDir: options.dataDir, defaultLocalFolder: false });
  try {
    const token = localAccess(app).rotate();
    console.log(`The web UI token was replaced; the old link no longer works. Open Tributary's address with ?token= and this token:\n${token}`);
  } finally {
    await app.close();
  }
}

/** The SIGTERM path, once the server runs: closes it and the database, then exits with `code`. */
let stopServer: ((reason: string, code: number) => Promise<void>) | undefined;
// Until then (starting, or a `keys` command) there is no server, and SQLite's journal makes
// an abrupt exit safe for the database.
installProcessGuard(() => (stopServer ? stopServer('Uncaught exception', 1) : process.exit(1)));

async function main(): Promise<void> {
  const commands: Record<string, (args: string[]) => Promise<void>> = { keys, 'ui-token': uiToken };
  const command = Object.hasOwn(commands, process.argv[2] ?? '') ? commands[process.argv[2]!] : undefined;
  if (command) return command(process.argv.slice(3)).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(2);
  });
  const options = parseServeOptions(process.argv.slice(2));
  for (const warning of options.warnings) console.warn(warning);
  const app = await createApp({ dataDir: options.dataDir, defaultLocalFolder: options.localFolder });
  if (options.apiKey) app.apiKeys.ensure(options.apiKey);
  const here = dirname(fileURLToPath(import.meta.url));
  const listen = (port: number) => startLocalServer(app, { host: options.host, port, rendererDir: join(here, '../renderer') });
  const http = await listen(options.port).catch(async (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EADDRINUSE') throw e;
    // Another Tributary (or anything else) has the port: a default port gives way to a free
    // one; a port the user chose is theirs to change.
    if (options.portGiven) {
      await app.close();
      throw new Error(`port ${options.port} is in use (is Tributary already running?). Choose another with --port N, or --port 0 for any free port.`);
    }
    console.log(`Port ${options.port} is in use (is Tributary already running?), so this one uses another port.`);
    return listen(0);
  });
  if (!['127.0.0.1', 'localhost', '::1'].includes(options.host)) {
    console.warn(`Warning: listening on ${options.host}; anyone who can reach it and knows a key can use your accounts.`);
  }
  console.log(`Tributary is running at ${http.uiUrl}`);

  let stopping = false;
  const stop = async (reason: string, code: number) => {
    if (stopping) {
      if (code !== 0) process.exit(code); // an uncaught exception while stopping: wait no longer
      return;
    }
    stopping = true;
    console.log(`${reason}, shutting down.`);
    const force = setTimeout(() => process.exit(1), 10_000).unref();
    try {
      await http.close();
      await app.close();
    } catch (e) {
      // The process guard only logs a rejection, so a failed close must end the process here.
      console.error('Tributary could not close cleanly:', e);
      code = 1;
    }
    clearTimeout(force);
    process.exit(code);
  };
  stopServer = stop;
  process.on('SIGINT', () => void stop('Received SIGINT', 0));
  process.on('SIGTERM', () => void stop('Received SIGTERM', 0));
}

main().catch((e) => {
  console.error(`Tributary could not start: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
});
