/**
 * `s3`: any S3-compatible object store (AWS, MinIO, moto, s3rver, ...). The bucket (optionally
 * below a key prefix) is the account root. Folders are key prefixes; an empty folder is kept as
 * a zero-byte marker object `<prefix>/`, and a prefix with objects below it is a folder even
 * without a marker. Multipart uploads are native (CreateMultipartUpload / UploadPart).
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Transform, type Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type _Object,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { lookup as mimeLookup } from 'mime-types';
import { z } from 'zod';
import { ServiceError } from '../../errors';
import { defineConnector } from '../registry';
import { isUnreachable } from '../shared/net-errors';
import { baseName, isInside, ROOT } from '../shared/paths';
import { md5Of } from './md5';
import type { ChunkWriter, Entry, PartReceipt, StorageConnector, StorageFeatures, WriteOptions } from '../types';

const MiB = 1024 * 1024;
/** S3's own limits: parts of 5 MiB..5 GiB, at most 10,000 of them. */
export const MIN_PART = 5 * MiB;
export const DEFAULT_PART = 8 * MiB;
const MAX_PARTS = 10_000;
/** CopyObject copies at most 5 GiB; larger objects are copied part by part (UploadPartCopy). */
const COPY_OBJECT_LIMIT = 5 * 1024 * MiB;

/** The smallest whole-MiB part size ≥ 8 MiB that fits `size` in 10,000 parts. */
export function objectStorePartSize(size: number): number {
  const needed = Math.ceil(size / MAX_PARTS / MiB) * MiB;
  return Math.max(DEFAULT_PART, MIN_PART, needed);
}

const bool = z.preprocess((v) => (typeof v === 'string' ? ['1', 'true', 'yes', 'on'].includes(v.toLowerCase()) : v), z.boolean());

const options = z.object({
  accessKeyId: z.string().min(1).meta({ title: 'Access key id' }),
  secretAccessKey: z.string().min(1).meta({ title: 'Secret access key', secret: true }),
  endpoint: z.url().optional().meta({ title: 'Endpoint', description: 'Leave empty for AWS; e.g. https://minio.example.com', placeholder: 'https://s3.amazonaws.com' }),
  region: z.string().min(1).default('us-east-1').meta({ title: 'Region' }),
  bucket: z.string().min(1).meta({ title: 'Bucket' }),
  pathStyle: bool.default(false).meta({ title: 'Path-style addressing', description: 'Needed by most self-hosted servers.' }),
  prefix: z.string().optional().meta({ title: 'Key prefix', description: 'Use only the keys below this prefix as the account root.' }),
});
type Options = z.infer<typeof options>;

/** Maps SDK and network failures onto the documented codes. */
export function s3Error(e: unknown, what: string, bucket: string): ServiceError {
  if (e instanceof ServiceError) return e;
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; errors?: { code?: string }[] };
  const name = err?.name ?? '';
  const status = err?.$metadata?.httpStatusCode;
  const code = err?.code ?? err?.errors?.[0]?.code ?? '';
  const msg = err?.message || name || String(e);
  if (name === 'NoSuchBucket') return new ServiceError('not_found', `The bucket "${bucket}" does not exist.`, {}, { cause: e });
  if (name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload' || status === 404) {
    return new ServiceError('not_found', `${what} was not found.`, {}, { cause: e });
  }
  if (['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'Forbidden', 'ExpiredToken', 'InvalidToken'].includes(name) || status === 403) {
    return new ServiceError('upstream_auth_failed', `S3 refused the credentials: ${msg}`, {}, { cause: e });
  }
  if (isUnreachable(code) || name === 'TimeoutError') {
    return new ServiceError('service_not_available', `The S3 server cannot be reached (${code || name}).`, { retryAfter: 5 }, { cause: e });
  }
  if (name === 'SlowDown' || status === 503) return new ServiceError('service_not_available', `S3 is busy: ${msg}`, { retryAfter: 5 }, { cause: e });
  if (name === 'BadDigest' || name === 'InvalidDigest') return new ServiceError('upstream_error', `S3 received corrupted data: ${msg}`, {}, { cause: e });
  if (name === 'EntityTooSmall' || name === 'InvalidPart' || name === 'InvalidPartOrder') return new ServiceError('invalid_parameters', `S3 rejected the parts: ${msg}`, {}, { cause: e });
  if (name === 'MethodNotAllowed' || name === 'NotImplemented' || status === 501) {
    return new ServiceError('not_implemented', `This S3 server does not support the request (${name || status}).`, {}, { cause: e });
  }
  if (status && status >= 500) return new ServiceError('upstream_error', `S3 failed: ${msg}`, {}, { cause: e });
  if (status && status >= 400) return new ServiceError('upstream_error', `S3 rejected the request: ${msg}`, {}, { cause: e });
  return new ServiceError('service_not_available', `S3 request failed: ${msg}`, {}, { cause: e });
}

const stripQuotes = (etag?: string) => etag?.replace(/^W\//, '').replace(/"/g, '');
const md5FromEtag = (etag?: string) => (etag && /^[0-9a-f]{32}$/.test(etag) ? etag : undefined);

export class S3Connector implements StorageConnector {
  readonly client: S3Client;
  readonly bucket: string;
  private readonly prefix: string;
  readonly features: StorageFeatures;

  constructor(private readonly o: Options) {
    this.bucket = o.bucket;
    this.prefix = (o.prefix ?? '').replace(/^\/+|\/+$/g, '');
    if (this.prefix) this.prefix += '/';
    const agentOptions = { keepAlive: true, maxSockets: 64 };
    this.client = new S3Client({
      region: o.region,
      endpoint: o.endpoint,
      forcePathStyle: o.pathStyle,
      credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey },
      // Third-party S3 servers often reject the SDK's default CRC32 trailers; send checksums
      // only where the API requires them (we send Content-MD5 on parts ourselves).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      requestHandler: {
        httpAgent: new HttpAgent(agentOptions),
        httpsAgent: new HttpsAgent(agentOptions),
        connectionTimeout: 10_000,
        requestTimeout: 120_000,
      },
    });
    this.features = {
      caseSensitive: true,
      hashes: ['md5'],
      modTimePrecisionMs: 1000,
      atomicWrites: true,
      noReplace: true,
      move: (from, to) => this.moveOrCopy(from, to, true),
      copy: (from, to) => this.moveOrCopy(from, to, false),
      openChunkWriter: (path, plan) => this.openChunkWriter(path, plan),
      resumeChunkWriter: async (path, state) => this.chunkWriter(path, state as unknown as WriterState),
      partSizeFor: objectStorePartSize,
      uploadUrl: (path, opts) => this.uploadUrl(path, opts),
    };
  }

  // ---- keys ----------------------------------------------------------------------------------

  private key(path: string): string {
    return this.prefix + path.slice(1);
  }

  /** The prefix of a folder's children ('' or 'p/' for the root). */
  private dirKey(path: string): string {
    return path === ROOT ? this.prefix : `${this.key(path)}/`;
  }

  private pathOf(key: string): string {
    return '/' + key.slice(this.prefix.length).replace(/\/$/, '');
  }

  private async send<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw s3Error(e, what, this.bucket);
    }
  }

  private fileEntry(path: string, o: { size?: number; modified?: Date; etag?: string; mimeType?: string; raw?: Record<string, unknown> }): Entry {
    const etag = stripQuotes(o.etag);
    const md5 = md5FromEtag(etag);
    return {
      path,
      name: baseName(path),
      kind: 'file',
      size: o.size ?? 0,
      modified: o.modified ?? null,
      created: null,
      etag,
      mimeType: o.mimeType,
      hashes: md5 ? { md5 } : {},
      raw: { Key: this.key(path), ETag: etag, ...o.raw },
    };
  }

  private folderEntry(path: string, modified: Date | null = null): Entry {
    return { path, name: baseName(path), kind: 'folder', size: null, modified, created: null, raw: { Prefix: this.dirKey(path) } };
  }

  // ---- core ----------------------------------------------------------------------------------

  private async head(key: string) {
    try {
      return await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e) {
      const err = s3Error(e, key, this.bucket);
      if (err.code === 'not_found' && !err.message.includes('bucket')) return undefined;
      throw err;
    }
  }

  async stat(path: string): Promise<Entry> {
    if (path === ROOT) return this.folderEntry(ROOT);
    const file = await this.head(this.key(path));
    if (file) {
      return this.fileEntry(path, { size: file.ContentLength, modified: file.LastModified, etag: file.ETag, mimeType: file.ContentType });
    }
    const marker = await this.head(this.dirKey(path));
    if (marker) return this.folderEntry(path, marker.LastModified ?? null);
    // An implicit folder: objects exist below the prefix but no marker does.
    const below = await this.send(path, () => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.dirKey(path), MaxKeys: 1 })));
    if (below.KeyCount || below.Contents?.length) return this.folderEntry(path);
    throw new ServiceError('not_found', `"${path}" was not found.`);
  }

  async list(path: string): Promise<Entry[]> {
    const folder = await this.stat(path);
    if (folder.kind !== 'folder') throw new ServiceError('invalid_parent_folder', `"${path}" is not a folder.`);
    const prefix = this.dirKey(path);
    const out: Entry[] = [];
    let token: string | undefined;
    do {
      const page = await this.send(path, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token, MaxKeys: 1000 })),
      );
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix && p.Prefix !== prefix) out.push(this.folderEntry(this.pathOf(p.Prefix)));
      for (const o of page.Contents ?? []) if (o.Key && o.Key !== prefix) out.push(this.objectEntry(o));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  private objectEntry(o: _Object): Entry {
    return this.fileEntry(this.pathOf(o.Key!), { size: o.Size, modified: o.LastModified, etag: o.ETag, raw: { StorageClass: o.StorageClass } });
  }

  async read(path: string, opts: { start?: number; end?: number; signal?: AbortSignal } = {}): Promise<Readable> {
    const range = opts.start !== undefined || opts.end !== undefined ? `bytes=${opts.start ?? 0}-${opts.end ?? ''}` : undefined;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path), Range: range }), { abortSignal: opts.signal });
      const body = res.Body as Readable;
      if (!range) return body;
      // Some servers answer with more than was asked: the whole object, or (s3rver, for
      // "bytes=0-0") the range up to the end. Cut the answer down to the requested bytes.
      const got = /^bytes (\d+)-(\d+)\//.exec(res.ContentRange ?? '');
      const gotStart = got ? Number(got[1]) : 0;
      const gotEnd = got ? Number(got[2]) : Infinity;
      const start = opts.start ?? 0;
      if (gotStart === start && (opts.end === undefined || gotEnd <= opts.end)) return body;
      return sliceStream(body, start - gotStart, opts.end === undefined ? undefined : opts.end - gotStart);
    } catch (e) {
      const err = s3Error(e, path, this.bucket);
      if (err.code === 'not_found') {
        const entry = await this.stat(path);
        if (entry.kind === 'folder') throw new ServiceError('invalid_parameters', `"${path}" is a folder.`);
      }
      throw err;
    }
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    const contentType = opts.mimeType || mimeLookup(baseName(path)) || 'application/octet-stream';
    const upload = new Upload({
      client: this.client,
      // If-None-Match: * makes S3 refuse (412) to replace: the no-replace publish. It reaches S3
      // on a single PUT (files below one part); lib-storage's own multipart path does not carry
      // it to CompleteMultipartUpload, so big files rely on Tributary's name reservations.
      params: { Bucket: this.bucket, Key: this.key(path), Body: body, ContentType: contentType, ...(opts.noReplace ? { IfNoneMatch: '*' } : {}) },
      partSize: opts.size !== undefined ? objectStorePartSize(opts.size) : DEFAULT_PART,
      queueSize: 4,
      leavePartsOnError: false,
      abortController: opts.signal ? abortControllerFor(opts.signal) : undefined,
    });
    await this.send(path, () => upload.done()).catch((e) => Promise.reject(notReplaced(e, path)));
    return this.stat(path);
  }

  async mkdir(path: string): Promise<Entry> {
    const exists = await this.stat(path).catch((e) => (e instanceof ServiceError && e.code === 'not_found' ? undefined : Promise.reject(e)));
    if (exists) throw new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`);
    await this.send(path, () => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.dirKey(path), Body: '', ContentLength: 0 })));
    return this.folderEntry(path, new Date());
  }

  /** Every key at or below a folder prefix, the marker included. */
  private async *keysBelow(prefix: string): AsyncGenerator<_Object> {
    let token: string | undefined;
    do {
      const page = await this.send(prefix, () => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: 1000 })));
      for (const o of page.Contents ?? []) yield o;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  private async deleteKeys(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const res = await this.send('delete', () =>
        this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } })),
      );
      if (res.Errors?.length) throw new ServiceError('upstream_error', `S3 could not delete "${res.Errors[0].Key}": ${res.Errors[0].Message}`);
    }
  }

  async remove(path: string, { recursive }: { recursive: boolean }): Promise<void> {
    if (path === ROOT) throw new ServiceError('forbidden', 'The root cannot be removed.');
    const entry = await this.stat(path);
    if (entry.kind === 'file') {
      await this.send(path, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(path) })));
      return;
    }
    const prefix = this.dirKey(path);
    const keys: string[] = [];
    for await (const o of this.keysBelow(prefix)) keys.push(o.Key!);
    if (!recursive && keys.some((k) => k !== prefix)) throw new ServiceError('folder_not_empty', `The folder "${baseName(path)}" is not empty.`);
    await this.deleteKeys(keys);
  }

  private copySource(key: string): string {
    return `${this.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  private async copyKey(from: string, to: string, size: number): Promise<void> {
    if (size > COPY_OBJECT_LIMIT) return this.copyLarge(from, to, size, Math.max(512 * MiB, Math.ceil(size / MAX_PARTS / MiB) * MiB));
    await this.send(from, () =>
      this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: this.copySource(from), MetadataDirective: 'COPY' })),
    );
  }

  /** Server-side multipart copy in ranges of `partSize` (used above CopyObject's 5 GiB limit). */
  async copyLarge(from: string, to: string, size: number, partSize: number): Promise<void> {
    const head = await this.head(from);
    const { UploadId } = await this.send(to, () => this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: to, ContentType: head?.ContentType })));
    const base = { Bucket: this.bucket, Key: to, UploadId };
    try {
      const count = Math.ceil(size / partSize);
      const etags: string[] = [];
      const queue = Array.from({ length: count }, (_, i) => i + 1);
      await Promise.all(
        Array.from({ length: Math.min(4, count) }, async () => {
          for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
            const start = (n - 1) * partSize;
            const end = Math.min(size, start + partSize) - 1;
            const part = n;
            const res = await this.send(from, () =>
              this.client.send(new UploadPartCopyCommand({ ...base, PartNumber: part, CopySource: this.copySource(from), CopySourceRange: `bytes=${start}-${end}` })),
            );
            etags[part - 1] = res.CopyPartResult!.ETag!;
          }
        }),
      );
      await this.send(to, () =>
        this.client.send(new CompleteMultipartUploadCommand({ ...base, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } })),
      );
    } catch (e) {
      await this.client.send(new AbortMultipartUploadCommand(base)).catch(() => {});
      throw e;
    }
  }

  /** Server-side copy of one object or of every key below a prefix; move deletes the sources after. */
  private async moveOrCopy(from: string, to: string, move: boolean): Promise<Entry> {
    if (to === from || isInside(to, from)) throw new ServiceError('invalid_parameters', 'A folder cannot be moved into itself.');
    const entry = await this.stat(from);
    const taken = await this.stat(to).catch((e) => (e instanceof ServiceError && e.code === 'not_found' ? undefined : Promise.reject(e)));
    if (taken) throw new ServiceError('naming_conflict', `"${baseName(to)}" already exists.`);
    if (entry.kind === 'file') {
      await this.copyKey(this.key(from), this.key(to), entry.size ?? 0);
      if (move) await this.send(from, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(from) })));
      return this.stat(to);
    }
    const src = this.dirKey(from);
    const dst = this.dirKey(to);
    const objects: _Object[] = [];
    for await (const o of this.keysBelow(src)) objects.push(o);
    const keys = objects.map((o) => o.Key!);
    const queue = [...objects];
    await Promise.all(
      Array.from({ length: Math.min(8, queue.length) }, async () => {
        for (let o = queue.shift(); o !== undefined; o = queue.shift()) await this.copyKey(o.Key!, dst + o.Key!.slice(src.length), o.Size ?? 0);
      }),
    );
    // Keep the target visible as a folder even if the source was an implicit one.
    if (!keys.includes(src)) await this.send(to, () => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: dst, Body: '', ContentLength: 0 })));
    if (move) await this.deleteKeys(keys);
    return this.folderEntry(to, new Date());
  }

  // ---- multipart -----------------------------------------------------------------------------

  private async openChunkWriter(path: string, plan: { size: number; partSize: number }): Promise<ChunkWriter> {
    if (plan.partSize < MIN_PART) throw new ServiceError('invalid_parameters', `S3 parts must be at least ${MIN_PART} bytes.`);
    if (Math.ceil(plan.size / plan.partSize) > MAX_PARTS) throw new ServiceError('invalid_parameters', `S3 uploads have at most ${MAX_PARTS} parts.`);
    const res = await this.send(path, () =>
      this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(path), ContentType: mimeLookup(baseName(path)) || 'application/octet-stream' }),
      ),
    );
    return this.chunkWriter(path, { uploadId: res.UploadId!, key: this.key(path), partSize: plan.partSize });
  }

  private chunkWriter(path: string, state: WriterState): ChunkWriter {
    if (typeof state?.uploadId !== 'string' || typeof state.key !== 'string' || typeof state.partSize !== 'number') {
      throw new ServiceError('invalid_parameters', 'This multipart state does not belong to S3.');
    }
    const { uploadId, key } = state;
    const base = { Bucket: this.bucket, Key: key, UploadId: uploadId };
    return {
      partSize: state.partSize,
      parallel: true,
      state: { ...state },
      writePart: async (partNumber, body, signal): Promise<PartReceipt> => {
        // Content-MD5 makes the server verify every part (BadDigest otherwise).
        const md5 = await md5Of(body);
        const res = await this.send(`Part ${partNumber}`, () =>
          this.client.send(
            new UploadPartCommand({ ...base, PartNumber: partNumber, Body: body, ContentLength: body.length, ContentMD5: md5.toString('base64') }),
            { abortSignal: signal },
          ),
        );
        const etag = stripQuotes(res.ETag);
        if (etag && /^[0-9a-f]{32}$/.test(etag) && etag !== md5.toString('hex')) {
          throw new ServiceError('upstream_error', `S3 stored part ${partNumber} with a different checksum.`);
        }
        return { partNumber, size: body.length, etag };
      },
      complete: async (parts, options = {}) => {
        const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber);
        const condition = options.noReplace ? { IfNoneMatch: '*' } : {};
        await this.send(path, () =>
          this.client.send(
            new CompleteMultipartUploadCommand({ ...base, ...condition, MultipartUpload: { Parts: sorted.map((p) => ({ PartNumber: p.partNumber, ETag: `"${p.etag}"` })) } }),
          ),
        ).catch((e) => Promise.reject(notReplaced(e, path)));
        return this.stat(path);
      },
      abort: async () => {
        try {
          await this.client.send(new AbortMultipartUploadCommand(base));
        } catch (e) {
          const err = s3Error(e, path, this.bucket);
          if (err.code !== 'not_found') throw err; // already gone: aborting is idempotent
        }
      },
    };
  }

  private async uploadUrl(path: string, opts: { expiresIn: number; useHttp: boolean }): Promise<{ method: string; url: string }> {
    const url = await this.send(path, () =>
      getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key: this.key(path) }), { expiresIn: opts.expiresIn }),
    );
    // The signature covers host and path, not the scheme, so the http variant stays valid.
    return { method: 'PUT', url: opts.useHttp ? url.replace(/^https:/, 'http:') : url };
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

interface WriterState {
  uploadId: string;
  key: string;
  partSize: number;
}

/**
 * A refused conditional write (If-None-Match: *): 412, or 409 when another conditional write to
 * the key was in flight. The bytes went with the request, so there is no next name to try here.
 */
function notReplaced(e: unknown, path: string): unknown {
  const err = (e instanceof ServiceError ? e.cause : e) as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  const status = err?.$metadata?.httpStatusCode;
  if (status === 412 || err?.name === 'PreconditionFailed' || err?.name === 'ConditionalRequestConflict') {
    return new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`, {}, { cause: e });
  }
  return e;
}

/** Bytes start..end (inclusive) of a stream that holds the whole object. */
function sliceStream(body: Readable, start: number, end?: number): Readable {
  let pos = 0;
  const last = end ?? Infinity;
  const out = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const from = Math.max(0, start - pos);
      const to = Math.min(chunk.length, last + 1 - pos);
      pos += chunk.length;
      if (to > from) this.push(chunk.subarray(from, to));
      if (pos > last) {
        body.unpipe(out);
        body.destroy();
        this.push(null);
      }
      done();
    },
  });
  body.on('error', (e) => out.destroy(e));
  return body.pipe(out);
}

function abortControllerFor(signal: AbortSignal): AbortController {
  const c = new AbortController();
  if (signal.aborted) c.abort(signal.reason);
  else signal.addEventListener('abort', () => c.abort(signal.reason), { once: true });
  return c;
}

const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

export default defineConnector({
  id: 's3',
  name: 'Amazon S3 (and compatible)',
  kind: 'storage',
  group: 'object_store',
  options,
  fromImport: (body) => ({
    accessKeyId: str(body.token),
    secretAccessKey: str(body.token_secret),
    endpoint: str(body.endpoint),
    region: str(body.region),
    bucket: str(body.bucket),
    pathStyle: body.path_style ?? undefined,
    prefix: str(body.prefix),
  }),
  describe: (o) => `${o.bucket}@${o.endpoint ? new URL(o.endpoint).host : `s3.${o.region}.amazonaws.com`}`,
  create: (o) => new S3Connector(o),
});
