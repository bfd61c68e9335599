/**
 * Child process for the download crash test: opens the app on a data folder, which continues
 * the downloads left running there, and waits until it is killed.
 * `node scripts/run-ts.mjs test/downloads/download-child.ts <dataDir> <json DownloaderOptions>`
 */
import { createApp } from '../../src-main/app';

export async function main([dataDir, downloads]: string[]): Promise<void> {
  await createApp({ dataDir: dataDir!, defaultLocalFolder: false, downloads: JSON.parse(downloads!) });
  console.log('STARTED');
  await new Promise(() => {});
}
