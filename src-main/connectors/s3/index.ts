/**
 * `s3`: any S3-compatible object store (AWS, MinIO, moto, s3rver, ...). The bucket (optionally
 * below a key prefix) is the account root. Folders are key prefixes; an empty folder is kept as
 * a zero-byte marker object `<prefix>/`, and a prefix with objects below it is a folder even
 * without a marker. Multipart uploads are native (CreateMultipartUpload / UploadPart).
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { pipeline, Transform, type Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectAclCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type _Object,
  type Grant,
  type Grantee,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { MULTIPART_MIN_SIZE } from '../../contract/limits';
import { ServiceError } from '../../errors';
import type { S3Options } from './options';
import { openFilePart } from '../shared/file-part';
import { md5Of, md5OfFilePart } from '../shared/md5';
import { ChangedMeanwhile } from '../shared/if-match';
import { isUnreachable } from '../shared/net-errors';
import { contentTypeOf, inParallel, ObjectStoreConnector, uploadPartSize, type StoredObject } from '../shared/object-store';
import { MAX_PARTS, MiB } from '../shared/parts';
import { baseName } from '../shared/paths';
import { OpenUploads } from './open-uploads';
import type { ChunkWriter, ConnectorContext, Entry, PartReceipt, Permission, PermissionChanges, ReadOptions, StorageFeatures, WriteOptions } from '../types';

/** Grantees by group are named by the last segment of their URI (`AllUsers`, `AuthenticatedUsers`). */
const GROUP_URI = 'http://acs.amazonaws.com/groups/global/';

function granteeId(g: Grantee | undefined): string | undefined {
  if (!g) return undefined;
  if (g.Type === 'Group' && g.URI) return g.URI.startsWith(GROUP_URI) ? g.URI.slice(GROUP_URI.length) : g.URI;
  return g.ID ?? g.EmailAddress;
}

/** A principal of a permission update as a grantee: an e-mail, a group, or a canonical user id. */
function granteeOf(who: string): Grantee {
  if (who.includes('@')) return { Type: 'AmazonCustomerByEmail', EmailAddress: who };
  if (who === 'AllUsers' || who === 'AuthenticatedUsers') return { Type: 'Group', URI: `${GROUP_URI}${who}` };
  if (!/^[0-9a-f]{64}$/i.test(who)) throw new ServiceError('invalid_parameters', `"${who}" is not an e-mail address, a canonical user id or a group (AllUsers, AuthenticatedUsers).`);
  return { Type: 'CanonicalUser', ID: who };
}

/** A grantee as S3's grant header syntax names it. */
function granteeHeader(g: Grantee | undefined): string {
  if (g?.Type === 'Group' && g.URI) return `uri="${g.URI}"`;
  if (g?.Type === 'AmazonCustomerByEmail' && g.EmailAddress) return `emailAddress="${g.EmailAddress}"`;
  return g?.ID ? `id="${g.ID}"` : '';
}

/**
 * Grants as spec 1 permissions, one per grantee with its strongest grant: FULL_CONTROL (or
 * WRITE) is `writer` (`owner` for the object's owner), READ `reader`; ACP-only grants are left out.
 */
function aclPermissions(owner: string | undefined, grants: Grant[]): Permission[] {
  const rank = { READ: 1, WRITE: 2, FULL_CONTROL: 2 } as Record<string, number>;
  const best = new Map<string, { grant: Grant; rank: number }>();
  for (const g of grants) {
    const id = granteeId(g.Grantee);
    const r = rank[g.Permission ?? ''] ?? 0;
    if (!id || !r || (best.get(id)?.rank ?? 0) >= r) continue;
    best.set(id, { grant: g, rank: r });
  }
  return [...best.entries()].map(([id, { grant, rank: r }]) => ({
    id,
    email: grant.Grantee?.EmailAddress ?? null,
    name: grant.Grantee?.DisplayName ?? id,
    role: id === owner ? 'owner' : r === 2 ? 'writer' : 'reader',
  }));
}

/** CopyObject copies at most 5 GiB; larger objects are copied part by part (UploadPartCopy). */
const COPY_OBJECT_LIMIT = 5 * 1024 * MiB;

type Options = S3Options;

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

/**
 * A key or prefix of a ListObjectsV2 answer asked with `EncodingType: url` (an XML parser turns
 * a CR in a key into LF, and XML 1.0 cannot carry most control characters at all). S3 encodes a
 * space as "+"; a server that ignores the request answers without EncodingType and plain keys.
 */
const listedKey = (key: string, encoding: string | undefined) => (encoding === 'url' ? decodeURIComponent(key.replace(/\+/g, ' ')) : key);

/** Objects a move deletes at once, each with its own conditional DeleteObject. */
const PARALLEL_DELETES = 16;

/** The raw SDK error of `e` (a ServiceError's cause), with its name and HTTP status. */
function sdkError(e: unknown): { name?: string; $metadata?: { httpStatusCode?: number } } | undefined {
  return (e instanceof ServiceError ? e.cause : e) as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
}

/** A condition the server refused: 412, or 409 when another conditional request on the key was in flight. */
function refusedCondition(e: unknown): boolean {
  const err = sdkError(e);
  return err?.$metadata?.httpStatusCode === 412 || err?.name === 'PreconditionFailed' || err?.name === 'ConditionalRequestConflict';
}

/** The object itself is not there (not the bucket). */
function objectGone(e: unknown): boolean {
  const err = sdkError(e);
  return err?.name === 'NoSuchKey' || (err?.$metadata?.httpStatusCode === 404 && err?.name !== 'NoSuchBucket');
}

/**
 * `body` as a stream that fails with invalid_parameters once it is longer than `size` bytes, or
 * ends shorter: the upload then fails before the object is published.
 */
function sizeChecked(body: Readable, size: number, path: string): Readable {
  let seen = 0;
  const wrong = (how: string) => new ServiceError('invalid_parameters', `The upload of "${baseName(path)}" is ${how} than its declared size.`);
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > size ? wrong('longer') : null, chunk);
    },
    flush(done) {
      done(seen < size ? wrong('shorter') : null);
    },
  });
  return pipeline(body, counter, () => {});
}
const md5FromEtag = (etag?: string) => (etag && /^[0-9a-f]{32}$/.test(etag) ? etag : undefined);

export class S3Connector extends ObjectStoreConnector {
  readonly client: S3Client;
  readonly bucket: string;
  readonly features: StorageFeatures;
  /** Records of the multipart uploads `write` has open; none without a context (tests, scripts). */
  private readonly openUploads?: OpenUploads;
  /**
   * Settles once the uploads an earlier process left open (killed mid-write) are aborted; resolves
   * to how many were. Records whose abort failed stay for the next start.
   */
  readonly abandonedAborted: Promise<number>;
  /** Whether DeleteObject is sent with If-Match; false once the server answered 501 to it. */
  private conditionalDeletes = true;

  constructor(o: Options, context?: ConnectorContext) {
    const prefix = (o.prefix ?? '').replace(/^\/+|\/+$/g, '');
    super(prefix ? `${prefix}/` : '');
    this.bucket = o.bucket;
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
      ...this.commonFeatures(),
      openChunkWriter: (path, plan) => this.openChunkWriter(path, plan),
      resumeChunkWriter: async (path, state) => this.chunkWriter(path, state as unknown as WriterState),
      uploadUrl: (path, opts) => this.uploadUrl(path, opts),
      permissions: { list: (path) => this.permissions(path), update: (path, changes, o) => this.setPermissions(path, changes, o.replace) },
    };
    this.openUploads = context ? new OpenUploads(context.dataDir, context.accountId) : undefined;
    this.abandonedAborted = this.abortAbandoned().catch((e: unknown) => {
      console.warn(`S3 (${this.bucket}): could not abort uploads left open by an earlier run:`, e);
      return 0;
    });
  }

  private async abortAbandoned(): Promise<number> {
    if (!this.openUploads) return 0;
    let aborted = 0;
    for (const { name, upload } of await this.openUploads.abandoned()) {
      if (await this.abortUpload(upload)) {
        await this.openUploads.remove(name);
        aborted++;
      }
    }
    return aborted;
  }

  /** AbortMultipartUpload; true once the upload is gone (NoSuchUpload counts), false on any other failure. */
  private async abortUpload(u: { bucket: string; key: string; uploadId: string }): Promise<boolean> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: u.bucket, Key: u.key, UploadId: u.uploadId }));
      return true;
    } catch (e) {
      const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
      return err.name === 'NoSuchUpload' || err.$metadata?.httpStatusCode === 404;
    }
  }

  /**
   * The client `write` hands to lib-storage (and `copyLarge` uses): the same client, except that a
   * multipart upload it creates is recorded (`openUploads`) before CreateMultipartUpload returns,
   * so before the first part is sent, and the record is removed once Complete or Abort succeeds.
   * `open()` tells whether one is still recorded, with its id.
   */
  private recordingClient(records: OpenUploads): { client: S3Client; open(): { name: string; uploadId: string } | undefined } {
    const send = this.client.send.bind(this.client) as (command: unknown, options?: unknown) => Promise<unknown>;
    let open: { name: string; uploadId: string } | undefined;
    const client = Object.create(this.client) as S3Client;
    client.send = (async (command: unknown, options?: unknown) => {
      const out = await send(command, options);
      if (command instanceof CreateMultipartUploadCommand) {
        const { Bucket, Key } = command.input;
        const uploadId = (out as { UploadId?: string }).UploadId!;
        try {
          open = { name: await records.add({ bucket: Bucket!, key: Key!, uploadId }), uploadId };
        } catch (e) {
          // Unrecorded, it would outlive a crash: send no part.
          await this.abortUpload({ bucket: Bucket!, key: Key!, uploadId });
          throw e;
        }
      } else if (open && (command instanceof CompleteMultipartUploadCommand || command instanceof AbortMultipartUploadCommand)) {
        const name = open.name;
        open = undefined;
        await records.remove(name);
      }
      return out;
    }) as S3Client['send'];
    return { client, open: () => open };
  }

  protected mapError(e: unknown, what: string): ServiceError {
    return s3Error(e, what, this.bucket);
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

  protected folderRaw(prefix: string): Record<string, unknown> {
    return { Prefix: prefix };
  }

  // ---- permissions: object ACLs ------------------------------------------------------------------

  /** An object's ACL; folders are key prefixes, which have none. */
  private async acl(path: string) {
    const key = this.key(path);
    if (!(await this.head(key))) {
      const folder = await this.stat(path);
      throw new ServiceError('not_implemented', `"${folder.name}" is a folder: S3 keeps permissions (ACLs) on objects only.`);
    }
    return this.call(key, () => this.client.send(new GetObjectAclCommand({ Bucket: this.bucket, Key: key })));
  }

  private async permissions(path: string): Promise<Permission[]> {
    const acl = await this.acl(path);
    return aclPermissions(acl.Owner?.ID, acl.Grants ?? []);
  }

  private async setPermissions(path: string, changes: PermissionChanges, replace: boolean): Promise<Permission[]> {
    const acl = await this.acl(path);
    const owner = acl.Owner?.ID;
    const grants = new Map<string, Grant[]>();
    for (const g of acl.Grants ?? []) {
      const id = granteeId(g.Grantee);
      if (id && (!replace || id === owner)) grants.set(id, [...(grants.get(id) ?? []), g]);
    }
    for (const [who, role] of Object.entries(changes)) {
      if (who === owner || who === 'owner') throw new ServiceError('invalid_parameters', 'The owner of an object keeps full control.');
      if (role !== '' && role !== 'reader' && role !== 'writer') throw new ServiceError('invalid_parameters', `Role "${role}" is not one of reader, writer (or "" to remove).`);
      grants.delete(who);
      if (role) grants.set(who, [{ Grantee: granteeOf(who), Permission: role === 'reader' ? 'READ' : 'FULL_CONTROL' }]);
    }
    const key = this.key(path);
    // As x-amz-grant-* headers, which S3 and its emulators (moto ignores an XML policy body) all read.
    const header = (permission: string) =>
      [...grants.values()].flat().filter((g) => g.Permission === permission).map((g) => granteeHeader(g.Grantee)).filter(Boolean).join(', ') || undefined;
    await this.call(key, () =>
      this.client.send(
        new PutObjectAclCommand({
          Bucket: this.bucket,
          Key: key,
          GrantRead: header('READ'),
          GrantFullControl: header('FULL_CONTROL'),
          GrantReadACP: header('READ_ACP'),
          GrantWriteACP: header('WRITE_ACP'),
        }),
      ),
    );
    return this.permissions(path);
  }

  // ---- objects -------------------------------------------------------------------------------

  private async head(key: string) {
    try {
      return await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e) {
      const err = s3Error(e, key, this.bucket);
      if (err.code === 'not_found' && !err.message.includes('bucket')) return undefined;
      throw err;
    }
  }

  protected async headFile(path: string): Promise<Entry | undefined> {
    const file = await this.head(this.key(path));
    return file && this.fileEntry(path, { size: file.ContentLength, modified: file.LastModified, etag: file.ETag, mimeType: file.ContentType });
  }

  protected async headMarker(key: string): Promise<{ modified: Date | null } | undefined> {
    const marker = await this.head(key);
    return marker && { modified: marker.LastModified ?? null };
  }

  /** The root, once HeadBucket finds the bucket (a listing refused 403 is left to tell its own). */
  protected async statRoot(): Promise<Entry> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (e) {
      const status = sdkError(e)?.$metadata?.httpStatusCode;
      if (status === 404) throw new ServiceError('not_found', `The bucket "${this.bucket}" does not exist.`, {}, { cause: e });
      // HeadBucket needs the right to list the whole bucket; an account limited to its prefix lacks it.
      if (status !== 403) throw this.mapError(e, 'The bucket');
    }
    return super.statRoot();
  }

  protected async anyBelow(prefix: string): Promise<boolean> {
    const below = await this.call(prefix, () => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: 1 })));
    return Boolean(below.KeyCount || below.Contents?.length);
  }

  protected async *listLevel(prefix: string): AsyncGenerator<{ prefixes: string[]; files: Entry[] }> {
    let token: string | undefined;
    do {
      const page = await this.call(prefix, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token, MaxKeys: 1000, EncodingType: 'url' })),
      );
      const enc = page.EncodingType;
      yield {
        prefixes: (page.CommonPrefixes ?? []).flatMap((p) => (p.Prefix ? [listedKey(p.Prefix, enc)] : [])),
        files: (page.Contents ?? []).flatMap((o) => (o.Key ? [this.objectEntry({ ...o, Key: listedKey(o.Key, enc) })] : [])),
      };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  private objectEntry(o: _Object): Entry {
    return this.fileEntry(this.pathOf(o.Key!), { size: o.Size, modified: o.LastModified, etag: o.ETag, raw: { StorageClass: o.StorageClass } });
  }

  protected async download(key: string, opts: ReadOptions): Promise<Readable> {
    const range = opts.start !== undefined || opts.end !== undefined ? `bytes=${opts.start ?? 0}-${opts.end ?? ''}` : undefined;
    const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range }), { abortSignal: opts.signal });
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
  }

  async write(path: string, input: Readable, opts: WriteOptions = {}): Promise<Entry> {
    // Counted on the way: a body that does not match its declared size fails before the publish.
    const body = opts.size !== undefined ? sizeChecked(input, opts.size, path) : input;
    const contentType = contentTypeOf(path, opts.mimeType);
    const recording = this.openUploads ? this.recordingClient(this.openUploads) : undefined;
    const upload = new Upload({
      client: recording?.client ?? this.client,
      // If-None-Match: * makes S3 refuse (412) to replace: the no-replace publish; If-Match with
      // the ETag, the conditional replace. lib-storage sends its params with the single PUT and
      // with CompleteMultipartUpload, where S3 checks them as the object is published.
      params: { Bucket: this.bucket, Key: this.key(path), Body: body, ContentType: contentType, ...writeCondition(opts) },
      partSize: uploadPartSize(opts.size),
      queueSize: 4,
      leavePartsOnError: false,
      abortController: opts.signal ? abortControllerFor(opts.signal) : undefined,
    });
    try {
      // A cancel is told as one, as by every connector, not as the SDK's "Upload aborted".
      await this.call(path, () => upload.done()).catch((e) => Promise.reject(opts.signal?.aborted ? new ServiceError('request_timeout', 'The upload was cancelled.', {}, { cause: e }) : conditionRefused(e, path, opts)));
    } finally {
      // lib-storage does not abort when the signal fires while its body stream is waiting; what is
      // still open is aborted here, or left recorded for the next start when that fails too.
      const open = recording?.open();
      if (open && (await this.abortUpload({ bucket: this.bucket, key: this.key(path), uploadId: open.uploadId }))) await this.openUploads!.remove(open.name);
    }
    return this.stat(path);
  }

  protected async putMarker(key: string): Promise<void> {
    await this.call(key, () => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: '', ContentLength: 0 })));
  }

  protected async objectsBelow(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.call(prefix, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: 1000, EncodingType: 'url' })),
      );
      for (const o of page.Contents ?? []) out.push({ key: listedKey(o.Key!, page.EncodingType), size: o.Size ?? 0, etag: stripQuotes(o.ETag) });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /**
   * Objects with an ETag one DeleteObject each with If-Match (a 412 or 409 keeps the key, a 404 is
   * gone already); the others by DeleteObjects, 1,000 a request. A server that answers 501 to a
   * conditional delete gets plain ones from then on, as one that ignores the condition would.
   */
  protected async deleteObjects(objects: { key: string; etag?: string }[]): Promise<string[]> {
    const kept: string[] = [];
    await inParallel(
      objects.filter((o) => o.etag !== undefined),
      PARALLEL_DELETES,
      async ({ key, etag }) => {
        try {
          const condition = this.conditionalDeletes ? { IfMatch: `"${etag}"` } : {};
          await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key, ...condition }));
        } catch (e) {
          if (refusedCondition(e)) kept.push(key);
          else if (objectGone(e)) return;
          else if (this.conditionalDeletes && (sdkError(e)?.$metadata?.httpStatusCode === 501 || sdkError(e)?.name === 'NotImplemented')) {
            this.conditionalDeletes = false;
            await this.call(key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
          } else throw this.mapError(e, key);
        }
      },
    );
    const keys = objects.filter((o) => o.etag === undefined).map((o) => o.key);
    if (keys.length === 1) {
      await this.call(keys[0]!, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: keys[0] })));
      return kept;
    }
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const res = await this.call('delete', () =>
        this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } })),
      );
      if (res.Errors?.length) throw new ServiceError('upstream_error', `S3 could not delete "${res.Errors[0].Key}": ${res.Errors[0].Message}`);
    }
    return kept;
  }

  private copySource(key: string): string {
    return `${this.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  /**
   * With `etag`, a refused CopySourceIfMatch or a source gone (or changed: a 404 is checked, since
   * some servers answer it for copy sources they cannot parse) is ChangedMeanwhile for the source.
   */
  private async copyFailure(e: unknown, from: string, etag: string | undefined): Promise<ServiceError> {
    if (etag !== undefined && refusedCondition(e)) return new ChangedMeanwhile(this.pathOf(from), e);
    if (etag !== undefined && objectGone(e)) {
      const now = await this.head(from).catch(() => undefined);
      if (stripQuotes(now?.ETag) !== etag) return new ChangedMeanwhile(this.pathOf(from), e);
    }
    return this.mapError(e, from);
  }

  protected async copyObject(from: string, to: string, size: number, etag?: string): Promise<void> {
    if (size > COPY_OBJECT_LIMIT) return this.copyLarge(from, to, size, Math.max(512 * MiB, Math.ceil(size / MAX_PARTS / MiB) * MiB), etag);
    const condition = etag !== undefined ? { CopySourceIfMatch: `"${etag}"` } : {};
    try {
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: this.copySource(from), MetadataDirective: 'COPY', ...condition }));
    } catch (e) {
      throw await this.copyFailure(e, from, etag);
    }
  }

  /** Server-side multipart copy in ranges of `partSize` (used above CopyObject's 5 GiB limit). */
  async copyLarge(from: string, to: string, size: number, partSize: number, etag?: string): Promise<void> {
    const head = await this.head(from);
    if (etag !== undefined && stripQuotes(head?.ETag) !== etag) throw new ChangedMeanwhile(this.pathOf(from));
    const condition = etag !== undefined ? { CopySourceIfMatch: `"${etag}"` } : {};
    // Recorded like `write`'s uploads, so that a kill mid-copy leaves nothing open for long.
    const client = this.openUploads ? this.recordingClient(this.openUploads).client : this.client;
    const { UploadId } = await this.call(to, () => client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: to, ContentType: head?.ContentType })));
    const base = { Bucket: this.bucket, Key: to, UploadId };
    try {
      const count = Math.ceil(size / partSize);
      const etags: string[] = [];
      await inParallel(
        Array.from({ length: count }, (_, i) => i + 1),
        4,
        async (part) => {
          const start = (part - 1) * partSize;
          const end = Math.min(size, start + partSize) - 1;
          const res = await this.client
            .send(new UploadPartCopyCommand({ ...base, PartNumber: part, CopySource: this.copySource(from), CopySourceRange: `bytes=${start}-${end}`, ...condition }))
            .catch(async (e: unknown) => Promise.reject(await this.copyFailure(e, from, etag)));
          etags[part - 1] = res.CopyPartResult!.ETag!;
        },
      );
      await this.call(to, () =>
        client.send(new CompleteMultipartUploadCommand({ ...base, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } })),
      );
    } catch (e) {
      await client.send(new AbortMultipartUploadCommand(base)).catch(() => {});
      throw e;
    }
  }

  // ---- multipart -----------------------------------------------------------------------------

  private async openChunkWriter(path: string, plan: { size: number; partSize: number }): Promise<ChunkWriter> {
    if (plan.partSize < MULTIPART_MIN_SIZE) throw new ServiceError('invalid_parameters', `S3 parts must be at least ${MULTIPART_MIN_SIZE} bytes.`);
    if (Math.ceil(plan.size / plan.partSize) > MAX_PARTS) throw new ServiceError('invalid_parameters', `S3 uploads have at most ${MAX_PARTS} parts.`);
    const res = await this.call(path, () =>
      this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key(path), ContentType: contentTypeOf(path) }),
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
        const res = await this.call(`Part ${partNumber}`, () =>
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
      writeFilePart: async (partNumber, part, signal): Promise<PartReceipt> => {
        // Hashed by a worker reading the file, then streamed from the file: the part is never
        // in memory, and a stream body is signed as UNSIGNED-PAYLOAD (a buffer body would be
        // SHA-256-hashed on the event loop first). Content-MD5 still makes the server check it.
        const md5 = await md5OfFilePart(part);
        // The SDK does not retry a request with a stream body; the uploader's retry sends the
        // part again, from a new stream.
        const body = openFilePart(part);
        let res;
        try {
          res = await this.call(`Part ${partNumber}`, () =>
            this.client.send(new UploadPartCommand({ ...base, PartNumber: partNumber, Body: body, ContentLength: part.length, ContentMD5: md5.toString('base64') }), { abortSignal: signal }),
          );
        } finally {
          body.destroy();
        }
        const etag = stripQuotes(res.ETag);
        if (etag && /^[0-9a-f]{32}$/.test(etag) && etag !== md5.toString('hex')) {
          throw new ServiceError('upstream_error', `S3 stored part ${partNumber} with a different checksum.`);
        }
        return { partNumber, size: part.length, etag };
      },
      complete: async (parts, options = {}) => {
        const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber);
        const condition = options.noReplace ? { IfNoneMatch: '*' } : {};
        await this.call(path, () =>
          this.client.send(
            new CompleteMultipartUploadCommand({ ...base, ...condition, MultipartUpload: { Parts: sorted.map((p) => ({ PartNumber: p.partNumber, ETag: `"${p.etag}"` })) } }),
          ),
        ).catch((e) => Promise.reject(conditionRefused(e, path)));
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

  private uploadUrl(path: string, opts: { expiresIn: number; useHttp: boolean }): Promise<{ method: string; url: string }> {
    return this.presignedPut(path, opts.useHttp, (Key) => getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key }), { expiresIn: opts.expiresIn }));
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

/** The condition of a write's publish: none, no replace, or replace only the version `ifMatch`. */
const writeCondition = (opts: Pick<WriteOptions, 'noReplace' | 'ifMatch'>) =>
  opts.noReplace ? { IfNoneMatch: '*' } : opts.ifMatch !== undefined ? { IfMatch: `"${opts.ifMatch}"` } : {};

/**
 * A refused conditional write: 412, or 409 when another conditional write to the key was in
 * flight; for If-Match also 404, the object gone. The bytes went with the request, so there is no
 * next name to try here.
 */
function conditionRefused(e: unknown, path: string, opts: Pick<WriteOptions, 'ifMatch'> = {}): unknown {
  const err = (e instanceof ServiceError ? e.cause : e) as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  const status = err?.$metadata?.httpStatusCode;
  const refused = status === 412 || err?.name === 'PreconditionFailed' || err?.name === 'ConditionalRequestConflict';
  if (opts.ifMatch !== undefined && (refused || err?.name === 'NoSuchKey')) return new ChangedMeanwhile(path, e);
  if (refused) return new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`, {}, { cause: e });
  return e;
}

/**
 * Bytes start..end (inclusive) of a stream that holds the whole object. The answer's body is
 * let go whenever the slice ends, also when its reader goes away before the end (pipe() alone
 * would leave the response, and its socket, open).
 */
export function sliceStream(body: Readable, start: number, end?: number): Readable {
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
  out.once('close', () => body.destroy());
  return body.pipe(out);
}

function abortControllerFor(signal: AbortSignal): AbortController {
  const c = new AbortController();
  if (signal.aborted) c.abort(signal.reason);
  else signal.addEventListener('abort', () => c.abort(signal.reason), { once: true });
  return c;
}

