import { resolve } from 'node:path';
import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';

// Three bundles: the main process (two entries: the Electron composition root and the
// headless `serve` root, which share every service), the preload (CommonJS, because a
// sandboxed preload cannot be an ES module) and the React renderer.
export default defineConfig({
  main: {
    build: {
      rollupOptions: {
        input: { index: resolve('src-main/index.ts'), serve: resolve('src-main/serve.ts') },
        // V8 keeps each module's source in memory, two bytes a character if one character is
        // not Latin-1: escaped and without doc comments, the main chunk takes 0.6 MB, not 1.45.
        output: { charset: 'ascii', comments: { jsdoc: false } },
      },
    },
  },
  preload: {
    build: {
      rollupOptions: {
        input: { index: resolve('src-preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: 'src-renderer',
    build: { minify: true, rollupOptions: { input: resolve('src-renderer/index.html') } },
    plugins: [react()],
  },
});
