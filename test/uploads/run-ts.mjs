#!/usr/bin/env node
// Runs a TypeScript module's exported `main()` in a plain Node process, through Vite's SSR module
// loader (the project's own transform: import.meta.glob and all). No vite-node or tsx is
// installed, and the uploader tests need a real child process they can SIGKILL.
//   node test/uploads/run-ts.mjs path/to/file.ts [args...]
import { resolve } from 'node:path';
import { createServer } from 'vite';

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: run-ts.mjs <file.ts> [args...]');
  process.exit(2);
}
const server = await createServer({
  configFile: false,
  root: process.cwd(),
  logLevel: 'error',
  appType: 'custom',
  server: { middlewareMode: true, hmr: false, ws: false, watch: null },
  optimizeDeps: { noDiscovery: true, include: [] },
});
let code = 0;
try {
  const mod = await server.ssrLoadModule(resolve(file));
  if (typeof mod.main !== 'function') throw new Error(`${file} exports no main()`);
  code = (await mod.main(args)) ?? 0;
} catch (e) {
  console.error(e);
  code = 1;
} finally {
  await server.close();
}
process.exit(code);
