/**
 * Azurite's blob service on loopback (notes/test-servers.md §5), telemetry off, data in a
 * scratch folder; a fresh container is created for the caller.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { BlobServiceClient } from '@azure/storage-blob';
import { freePort, scratchDir, spawnServer, waitPort, waitPortClosed } from './util';

export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface AzuriteServer {
  port: number;
  /** Blob endpoint including the account: http://127.0.0.1:PORT/devstoreaccount1 */
  endpoint: string;
  accountName: string;
  accountKey: string;
  connectionString: string;
  container: string;
  /** Connector options for an `azure` account on this server (account name + key). */
  options: { accountName: string; accountKey: string; endpoint: string; container: string };
  stop(): Promise<void>;
}

const root = join(import.meta.dirname, '..', '..');

export async function startAzurite(container = 'tributary'): Promise<AzuriteServer> {
  const bin = join(root, 'node_modules', '.bin', 'azurite-blob');
  if (!existsSync(bin)) throw new Error(`azurite-blob is missing at ${bin}; it is a devDependency (npm ci).`);
  const dir = scratchDir('azurite');
  const port = await freePort();
  // --disableTelemetry is mandatory: without it Azurite posts to applicationinsights.azure.com.
  const child: ChildProcess = spawnServer(bin, [
    '--blobHost', '127.0.0.1', '--blobPort', String(port), '--location', dir,
    '--disableTelemetry', '--skipApiVersionCheck', '--silent', '--loose',
  ]);
  child.stdout?.resume();
  child.stderr?.resume();
  await waitPort(port, 30_000);
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${endpoint};`;
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container).createIfNotExists();
  return {
    port,
    endpoint,
    accountName: AZURITE_ACCOUNT,
    accountKey: AZURITE_KEY,
    connectionString,
    container,
    options: { accountName: AZURITE_ACCOUNT, accountKey: AZURITE_KEY, endpoint, container },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
      await waitPortClosed(port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
