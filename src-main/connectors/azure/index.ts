/**
 * `azure`: Azure Blob Storage, one container as the account root. Folders are name prefixes; an
 * empty folder is kept as a zero-byte marker blob `<prefix>/`. Multipart uploads are native
 * block blobs: each part is a staged block whose id is derived from the session's random id and
 * the part number, and complete commits the block list in part order.
 */
import { randomBytes } from 'node:crypto';
import { pipeline as joinStreams, Transform, type Readable } from 'node:stream';
import {
  AnonymousCredential,
  BlobSASPermissions,
  BlobServiceClient,
  StorageSharedKeyCredential,
  type BlobItem,
  type ContainerClient,
  type StoragePipelineOptions,
} from '@azure/storage-blob';
import { ServiceError } from '../../errors';
import type { AzureOptions } from './options';
import { knownDate } from '../shared/dates';
import { openFilePart } from '../shared/file-part';
import { md5Of, md5OfFilePart } from '../shared/md5';
import { ChangedMeanwhile } from '../shared/if-match';
import { isUnreachable } from '../shared/net-errors';
import { contentTypeOf, inParallel, ObjectStoreConnector, uploadPartSize, type StoredObject } from '../shared/object-store';
import { baseName } from '../shared/paths';
import type { ChunkWriter, Entry, PartReceipt, ReadOptions, StorageFeatures, WriteOptions } from '../types';

type Options = AzureOptions;

/**
 * A refused conditional commit: for If-Match (412 ConditionNotMet, or 404 when the blob is gone)
 * the version to replace changed; for If-None-Match: * (409 BlobAlreadyExists or 412) the name is
 * taken.
 */
function conditionRefused(e: unknown, path: string, opts: Pick<WriteOptions, 'ifMatch'> = {}): unknown {
  const err = (e instanceof ServiceError ? e.cause : e) as { statusCode?: number; code?: string; details?: { errorCode?: string } } | undefined;
  const code = err?.details?.errorCode ?? err?.code;
  if (opts.ifMatch !== undefined && (err?.statusCode === 412 || code === 'ConditionNotMet' || code === 'BlobNotFound')) return new ChangedMeanwhile(path, e);
  if (err?.statusCode === 412 || code === 'BlobAlreadyExists' || code === 'ConditionNotMet') {
    return new ServiceError('naming_conflict', `"${baseName(path)}" already exists.`, {}, { cause: e });
  }
  return e;
}

/** The Azure SDK's own code for a request that never reached the service. */
const AZURE_UNREACHABLE = ['REQUEST_SEND_ERROR'];

/** Maps RestError and network failures onto the documented codes. */
export function azureError(e: unknown, what: string, container: string): ServiceError {
  if (e instanceof ServiceError) return e;
  const err = e as { statusCode?: number; code?: string; message?: string; name?: string; details?: { errorCode?: string } };
  const code = err?.details?.errorCode ?? err?.code ?? '';
  const status = err?.statusCode;
  const msg = (err?.message ?? String(e)).split('\n')[0];
  if (code === 'ContainerNotFound') return new ServiceError('not_found', `The container "${container}" does not exist.`, {}, { cause: e });
  if (status === 404 || code === 'BlobNotFound') return new ServiceError('not_found', `${what} was not found.`, {}, { cause: e });
  if (status === 403 || status === 401 || ['AuthenticationFailed', 'AuthorizationFailure', 'AuthorizationPermissionMismatch'].includes(code)) {
    return new ServiceError('upstream_auth_failed', `Azure refused the credentials: ${msg}`, {}, { cause: e });
  }
  if (status === 409 && code === 'BlobAlreadyExists') return new ServiceError('naming_conflict', `${what} already exists.`, {}, { cause: e });
  if (isUnreachable(code, AZURE_UNREACHABLE) || err?.name === 'AbortError') {
    return new ServiceError('service_not_available', `Azure cannot be reached (${code || err?.name}).`, { retryAfter: 5 }, { cause: e });
  }
  if (status === 503 || status === 500 || status === 502) return new ServiceError('service_not_available', `Azure is busy: ${msg}`, { retryAfter: 5 }, { cause: e });
  if (code === 'Md5Mismatch') return new ServiceError('upstream_error', `Azure received corrupted data: ${msg}`, {}, { cause: e });
  if (code === 'InvalidBlockList' || code === 'InvalidBlockId') return new ServiceError('invalid_parameters', `Azure rejected the parts: ${msg}`, {}, { cause: e });
  if (status && status >= 400) return new ServiceError('upstream_error', `Azure rejected the request: ${msg}`, {}, { cause: e });
  return new ServiceError('service_not_available', `Azure request failed: ${msg}`, {}, { cause: e });
}

/**
 * The id of a multipart session's block. Uncommitted blocks belong to the blob, not to a session:
 * two sessions writing one name would share the ids of a bare part number, and the first commit
 * would take the blocks the other staged last. So each session has a random `nonce` and its ids
 * are `tributary-<nonce>-<part>`. Azure requires all block ids of a blob to have the same length:
 * the nonce has 32 hex digits and the part number 5, 48 characters as in the SDK's own ids (a
 * concurrent `write` of the name stages those). A session saved without a nonce (by an earlier
 * version) keeps its ids `tributary-part-<part>`.
 */
export const blockIdOf = (partNumber: number, nonce?: string) =>
  Buffer.from(nonce === undefined ? `tributary-part-${String(partNumber).padStart(5, '0')}` : `tributary-${nonce}-${String(partNumber).padStart(5, '0')}`).toString('base64');

/** The persisted state of a multipart session (`nonce` absent in sessions of earlier versions). */
interface WriterState {
  partSize: number;
  nonce?: string;
}

const newNonce = () => randomBytes(16).toString('hex');

/** The error of a `write` whose signal was aborted. */
const cancelled = () => new ServiceError('request_timeout', 'The upload was cancelled.');

/**
 * `body` as it goes to the service, counted: with a declared `size`, more bytes fail as soon as
 * they come and fewer at the end, before anything is committed.
 */
function declaredSize(body: Readable, path: string, size: number | undefined): Readable {
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (size !== undefined && seen > size) return done(new ServiceError('invalid_parameters', `The upload of "${baseName(path)}" is longer than its declared size.`));
      done(null, chunk);
    },
    flush(done) {
      done(size !== undefined && seen < size ? new ServiceError('invalid_parameters', `The upload of "${baseName(path)}" is shorter than its declared size.`) : null);
    },
  });
  // Failures travel both ways: a body that fails fails the upload, an upload that stops destroys the body.
  joinStreams(body, counted, () => {});
  return counted;
}

/** A refused conditional request (412 ConditionNotMet) or a blob that is not there (404 BlobNotFound). */
function refusal(e: unknown): 'changed' | 'gone' | undefined {
  const err = (e instanceof ServiceError ? e.cause : e) as { statusCode?: number; code?: string; details?: { errorCode?: string } } | undefined;
  const code = err?.details?.errorCode ?? err?.code;
  if (code === 'ContainerNotFound') return undefined;
  if (err?.statusCode === 412 || code === 'ConditionNotMet') return 'changed';
  if (err?.statusCode === 404 || code === 'BlobNotFound') return 'gone';
  return undefined;
}

const pipeline: StoragePipelineOptions = {
  // The SDK's default retries back off for minutes; the uploader has its own retry loop.
  retryOptions: { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2000, tryTimeoutInMs: 120_000 },
  keepAliveOptions: { enable: true },
};

function clientFor(o: Options): { service: BlobServiceClient; sharedKey?: StorageSharedKeyCredential } {
  if (o.connectionString) {
    const service = BlobServiceClient.fromConnectionString(o.connectionString, pipeline);
    return { service, sharedKey: service.credential instanceof StorageSharedKeyCredential ? service.credential : undefined };
  }
  const url = (o.endpoint ?? `https://${o.accountName}.blob.core.windows.net`).replace(/\/+$/, '');
  if (o.accountKey) {
    const sharedKey = new StorageSharedKeyCredential(o.accountName!, o.accountKey);
    return { service: new BlobServiceClient(url, sharedKey, pipeline), sharedKey };
  }
  const sas = o.sasToken!.replace(/^\?/, '');
  return { service: new BlobServiceClient(`${url}?${sas}`, new AnonymousCredential(), pipeline) };
}

export class AzureConnector extends ObjectStoreConnector {
  readonly container: ContainerClient;
  readonly features: StorageFeatures;
  private readonly name: string;

  constructor(o: Options) {
    super('');
    const { service, sharedKey } = clientFor(o);
    this.name = o.container;
    this.container = service.getContainerClient(o.container);
    this.features = {
      ...this.commonFeatures(),
      openChunkWriter: async (path, plan) => this.chunkWriter(path, { partSize: plan.partSize, nonce: newNonce() }),
      resumeChunkWriter: async (path, state) => this.chunkWriter(path, state as unknown as WriterState),
      // A SAS URL with a lifetime needs the account key; SAS-token accounts cannot mint one.
      ...(sharedKey ? { uploadUrl: (path: string, opts: { expiresIn: number; useHttp: boolean }) => this.uploadUrl(path, opts) } : {}),
    };
  }

  protected mapError(e: unknown, what: string): ServiceError {
    return azureError(e, what, this.name);
  }

  private fileEntry(path: string, p: { size?: number; modified?: Date; created?: Date; etag?: string; md5?: Uint8Array; mimeType?: string }): Entry {
    const etag = p.etag?.replace(/"/g, '');
    const md5 = p.md5 && p.md5.length === 16 ? Buffer.from(p.md5).toString('hex') : undefined;
    return {
      path,
      name: baseName(path),
      kind: 'file',
      size: p.size ?? 0,
      // Any Azure-compatible server can be the endpoint: a malformed date there is none here.
      modified: knownDate(p.modified),
      created: knownDate(p.created),
      etag,
      mimeType: p.mimeType,
      hashes: md5 ? { md5 } : {},
      raw: { name: this.key(path), etag, contentMD5: md5 },
    };
  }

  protected folderRaw(prefix: string): Record<string, unknown> {
    return { prefix };
  }

  private async props(name: string) {
    try {
      return await this.container.getBlobClient(name).getProperties();
    } catch (e) {
      const err = azureError(e, name, this.name);
      if (err.code === 'not_found' && !err.message.includes('container')) return undefined;
      throw err;
    }
  }

  protected async statRoot(): Promise<Entry> {
    await this.call('The container', () => this.container.getProperties());
    return super.statRoot();
  }

  protected async headFile(path: string): Promise<Entry | undefined> {
    const file = await this.props(this.key(path));
    return file && this.fileEntry(path, { size: file.contentLength, modified: file.lastModified, created: file.createdOn, etag: file.etag, md5: file.contentMD5, mimeType: file.contentType });
  }

  protected async headMarker(key: string): Promise<{ modified: Date | null } | undefined> {
    const marker = await this.props(key);
    return marker && { modified: marker.lastModified ?? null };
  }

  protected async anyBelow(prefix: string): Promise<boolean> {
    const page = await this.call(prefix, () => this.container.listBlobsFlat({ prefix }).byPage({ maxPageSize: 1 }).next());
    return !page.done && page.value.segment.blobItems.length > 0;
  }

  private itemEntry(b: BlobItem): Entry {
    const p = b.properties;
    return this.fileEntry(this.pathOf(b.name), { size: p.contentLength, modified: p.lastModified, created: p.createdOn, etag: p.etag, md5: p.contentMD5, mimeType: p.contentType });
  }

  protected async *listLevel(prefix: string): AsyncGenerator<{ prefixes: string[]; files: Entry[] }> {
    for await (const page of this.container.listBlobsByHierarchy('/', { prefix }).byPage({ maxPageSize: 1000 })) {
      yield { prefixes: (page.segment.blobPrefixes ?? []).map((p) => p.name), files: page.segment.blobItems.map((b) => this.itemEntry(b)) };
    }
  }

  protected async download(key: string, opts: ReadOptions): Promise<Readable> {
    const offset = opts.start ?? 0;
    const count = opts.end !== undefined ? opts.end - offset + 1 : undefined;
    const res = await this.container.getBlobClient(key).download(offset, count, { abortSignal: opts.signal });
    return res.readableStreamBody as Readable;
  }

  async write(path: string, body: Readable, opts: WriteOptions = {}): Promise<Entry> {
    const blob = this.container.getBlockBlobClient(this.key(path));
    const contentType = contentTypeOf(path, opts.mimeType);
    const bufferSize = uploadPartSize(opts.size);
    // On the commit, If-None-Match: * (the no-replace publish) or If-Match (the conditional replace).
    const conditions = opts.noReplace ? { ifNoneMatch: '*' } : opts.ifMatch !== undefined ? { ifMatch: `"${opts.ifMatch}"` } : undefined;
    const signal = opts.signal;
    if (signal?.aborted) {
      body.destroy();
      throw cancelled();
    }
    const counted = declaredSize(body, path, opts.size);
    const upload = this.call(path, () => blob.uploadStream(counted, bufferSize, 4, { blobHTTPHeaders: { blobContentType: contentType }, abortSignal: signal, conditions }));
    // The SDK waits for the body's next bytes without looking at the signal, and passes the
    // signal to the commit only. A cancel destroys the body, which fails the upload before its
    // commit (a commit already sent is aborted), and the write ends at once. Nothing is
    // committed: the blocks already staged stay uncommitted, and Azure drops those by itself
    // (at the blob's next commit, or after 7 days).
    let onAbort = () => {};
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => {
        const e = cancelled();
        counted.destroy(e);
        body.destroy();
        reject(e);
      };
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([upload, stopped]).catch((e) => Promise.reject(conditionRefused(e, path, opts)));
    } finally {
      signal?.removeEventListener('abort', onAbort);
      upload.catch(() => {}); // its failure after a cancel is the cancel's
    }
    return this.stat(path);
  }

  protected async putMarker(key: string): Promise<void> {
    await this.call(key, () => this.container.getBlockBlobClient(key).upload('', 0));
  }

  protected async objectsBelow(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    await this.call(prefix, async () => {
      for await (const b of this.container.listBlobsFlat({ prefix })) {
        out.push({ key: b.name, size: b.properties.contentLength ?? 0, etag: b.properties.etag?.replace(/"/g, '') });
      }
    });
    return out;
  }

  /**
   * Deletes the blobs, 8 at a time; one given with its `etag` only while it still has that
   * version (If-Match). Resolves with the keys left because they changed; a blob already gone
   * counts as deleted.
   */
  protected async deleteObjects(objects: { key: string; etag?: string }[]): Promise<string[]> {
    const changed: string[] = [];
    await inParallel(objects, 8, async ({ key, etag }) => {
      try {
        await this.call(key, () => this.container.deleteBlob(key, etag === undefined ? {} : { conditions: { ifMatch: `"${etag}"` } }));
      } catch (e) {
        const why = refusal(e);
        if (why === 'gone') return;
        if (why !== 'changed' || etag === undefined) throw e;
        // Azurite answers a conditional delete of a blob that is gone with 412 too.
        if (await this.props(key)) changed.push(key);
      }
    });
    return changed;
  }

  /**
   * Server-side Copy Blob (same account, so the shared key or SAS authorizes the source). With
   * `etag`, only that version of the source is copied (the source's If-Match); a source that
   * changed or went is ChangedMeanwhile.
   */
  protected async copyObject(from: string, to: string, _size: number, etag?: string): Promise<void> {
    const source = this.container.getBlobClient(from);
    const sourceConditions = etag === undefined ? undefined : { ifMatch: `"${etag}"` };
    await this.call(from, async () => {
      const poller = await this.container.getBlobClient(to).beginCopyFromURL(source.url, { intervalInMs: 200, sourceConditions });
      const result = await poller.pollUntilDone();
      if (result.copyStatus && result.copyStatus !== 'success') throw new ServiceError('upstream_error', `Azure could not copy "${from}": ${result.copyStatus}`);
    }).catch((e) => Promise.reject(etag !== undefined && refusal(e) ? new ChangedMeanwhile(this.pathOf(from), e) : e));
  }

  // ---- multipart -----------------------------------------------------------------------------

  private chunkWriter(path: string, state: WriterState): ChunkWriter {
    if (typeof state?.partSize !== 'number' || (state.nonce !== undefined && !/^[0-9a-f]{32}$/.test(String(state.nonce)))) {
      throw new ServiceError('invalid_parameters', 'This multipart state does not belong to Azure.');
    }
    const { partSize, nonce } = state;
    const blockId = (partNumber: number) => blockIdOf(partNumber, nonce);
    const blob = this.container.getBlockBlobClient(this.key(path));
    return {
      partSize,
      parallel: true,
      // Saved with the session: after a restart its parts keep their ids.
      state: nonce === undefined ? { partSize } : { partSize, nonce },
      writePart: async (partNumber, body, signal): Promise<PartReceipt> => {
        // The transactional MD5 makes the service verify each block (Md5Mismatch otherwise).
        const md5 = await md5Of(body);
        await this.call(`Part ${partNumber}`, () => blob.stageBlock(blockId(partNumber), body, body.length, { transactionalContentMD5: md5, abortSignal: signal }));
        return { partNumber, size: body.length, etag: md5.toString('hex') };
      },
      writeFilePart: async (partNumber, part, signal): Promise<PartReceipt> => {
        // Hashed by a worker reading the file, then streamed from it (a factory: the SDK opens
        // the range again for each of its retries); the block is never held in memory.
        const md5 = await md5OfFilePart(part);
        await this.call(`Part ${partNumber}`, () => blob.stageBlock(blockId(partNumber), () => openFilePart(part), part.length, { transactionalContentMD5: md5, abortSignal: signal }));
        return { partNumber, size: part.length, etag: md5.toString('hex') };
      },
      complete: async (parts, options = {}) => {
        const ids = [...parts].sort((a, b) => a.partNumber - b.partNumber).map((p) => blockId(p.partNumber));
        const conditions = options.noReplace ? { ifNoneMatch: '*' } : undefined;
        await this.call(path, () => blob.commitBlockList(ids, { blobHTTPHeaders: { blobContentType: contentTypeOf(path) }, conditions })).catch((e) =>
          Promise.reject(conditionRefused(e, path)),
        );
        return this.stat(path);
      },
      abort: async () => {
        // Azure has no "abort": uncommitted blocks live until the next commit or 7 days. When no
        // blob exists yet, committing an empty list and deleting the result discards them now.
        // An existing blob keeps its content; its stray blocks expire on their own.
        if (await this.props(this.key(path))) return;
        await this.call(path, () => blob.commitBlockList([]));
        await this.call(path, () => blob.deleteIfExists());
      },
    };
  }

  private uploadUrl(path: string, opts: { expiresIn: number; useHttp: boolean }): Promise<{ method: string; url: string }> {
    // The PUT needs the header `x-ms-blob-type: BlockBlob` (documented in docs/uploads.md).
    return this.presignedPut(path, opts.useHttp, (key) =>
      this.container.getBlockBlobClient(key).generateSasUrl({
        permissions: BlobSASPermissions.parse('cw'),
        expiresOn: new Date(Date.now() + opts.expiresIn * 1000),
      }),
    );
  }

  async close(): Promise<void> {}
}


/** The service URL the SDK makes of these options (for the test that keeps definition.ts in step). */
export const sdkServiceUrl = (o: AzureOptions): string => clientFor(o).service.url;
