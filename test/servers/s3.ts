/**
 * S3-compatible servers on loopback (notes/test-servers.md §4): s3rver from node_modules (data
 * on disk, so it can be stopped and restarted on the same port with the same objects — the
 * outage test needs that) and moto_server (in memory) where it is installed.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort, scratchDir, spawnServer, waitPort, waitPortClosed } from './util';

export interface S3Server {
  endpoint: string;
  port: number;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  /** Import body / connector options for an `s3` account on this server. */
  options: { accessKeyId: string; secretAccessKey: string; endpoint: string; region: string; bucket: string; pathStyle: true };
  /** The server's process id (benches read its CPU time); undefined while it is stopped. */
  pid(): number | undefined;
  /** Kills the server process and waits for the port to close (data stays, for s3rver). */
  pause(): Promise<void>;
  /** Starts it again on the same port (and, for s3rver, with the same data). */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const root = join(import.meta.dirname, '..', '..');

async function killAndWait(child: ChildProcess | undefined, port: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return waitPortClosed(port);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  await waitPortClosed(port);
}

async function createBucket(endpoint: string, accessKeyId: string, secretAccessKey: string, bucket: string): Promise<void> {
  const c = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
  try {
    await c.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    c.destroy();
  }
}

export async function startS3rver(bucket = 'tributary'): Promise<S3Server> {
  const bin = join(root, 'node_modules', '.bin', 's3rver');
  if (!existsSync(bin)) throw new Error(`s3rver is missing at ${bin}; it is a devDependency (npm ci).`);
  const dir = scratchDir('s3rver');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async () => {
    // s3rver encrypts continuation tokens with DES, which OpenSSL 3 only has in its legacy provider.
    child = spawnServer(bin, ['-d', dir, '-a', '127.0.0.1', '-p', String(port), '--silent', '--configure-bucket', bucket], {
      env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --openssl-legacy-provider`.trim() },
    });
    child.stdout?.resume();
    child.stderr?.resume();
    await waitPort(port);
  };
  await launch();
  const endpoint = `http://127.0.0.1:${port}`;
  const creds = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  return {
    endpoint,
    port,
    region: 'us-east-1',
    ...creds,
    bucket,
    options: { ...creds, endpoint, region: 'us-east-1', bucket, pathStyle: true },
    pid: () => child?.pid,
    pause: () => killAndWait(child, port),
    resume: launch,
    async stop() {
      await killAndWait(child, port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** moto_server's path, or undefined when it is not installed. */
export function motoBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v moto_server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function startMoto(bucket = 'tributary'): Promise<S3Server> {
  const bin = motoBinary();
  if (!bin) throw new Error('moto_server is not on PATH (pip install "moto[server]")');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const creds = { accessKeyId: 'test', secretAccessKey: 'testtest' };
  const endpoint = `http://127.0.0.1:${port}`;
  const launch = async () => {
    child = spawnServer(bin, ['-H', '127.0.0.1', '-p', String(port)]);
    child.stdout?.resume();
    child.stderr?.resume();
    await waitPort(port, 30_000);
    // moto keeps data in memory: a restarted server starts empty, with the bucket recreated.
    await createBucket(endpoint, creds.accessKeyId, creds.secretAccessKey, bucket);
  };
  await launch();
  return {
    endpoint,
    port,
    region: 'us-east-1',
    ...creds,
    bucket,
    options: { ...creds, endpoint, region: 'us-east-1', bucket, pathStyle: true },
    pid: () => child?.pid,
    pause: () => killAndWait(child, port),
    resume: launch,
    stop: () => killAndWait(child, port),
  };
}
