#!/usr/bin/env node
// Runs a TypeScript entry of this repo under Vite's module runner, so that it gets the same
// transforms as the build and the tests (import.meta.glob included):
//   node scripts/run-ts.mjs test/bench/webdav.bench.ts [args…]
// The module may export `main(argv)`; it is awaited when present.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createServer, createServerModuleRunner } from 'vite';

const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  console.error('usage: node scripts/run-ts.mjs <file.ts> [args…]');
  process.exit(2);
}
const server = await createServer({
  configFile: false,
  root: process.cwd(),
  logLevel: 'error',
  server: { middlewareMode: true, hmr: false, ws: false, watch: null },
  appType: 'custom',
  optimizeDeps: { noDiscovery: true, include: [] },
});
const runner = createServerModuleRunner(server.environments.ssr, { hmr: false });
let code = 0;
try {
  process.argv = [process.argv[0], resolve(entry), ...args];
  const mod = await runner.import(pathToFileURL(resolve(entry)).href);
  if (typeof mod.main === 'function') await mod.main(args);
} catch (e) {
  console.error(e);
  code = 1;
} finally {
  await runner.close();
  await server.close();
}
process.exitCode = code;
