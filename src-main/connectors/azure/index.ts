/**
 * `azure`: Azure Blob Storage, one container as the account root. Folders are name prefixes; an
 * empty folder is kept as a zero-byte marker blob `<prefix>/`. Multipart uploads are native
 * block blobs: each part is a staged block whose id is derived from its part number, and
 * complete commits the block list in part order.
 */
import type { Readable } from 'node:stream';
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
  if (opts.ifMatch !== undefined && (err?.statusCode === 412 || err?.statusCode === 404 || code === 'ConditionNotMet' || code === 'BlobNotFound')) return new ChangedMeanwhile(path, e);
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

/** Block ids must all have the same length within a blob: a fixed-width part number. */
export const blockId = (partNumber: number) => Buffer.from(`tributary-part-${String(partNumber).padStart(5, '0')}`).toString('base64');

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
      openChunkWriter: async (path, plan) => this.chunkWriter(path, { partSize: plan.partSize }),
      resumeChunkWriter: async (path, state) => this.chunkWriter(path, state as { partSize: number }),
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
    await this.call(path, () => blob.uploadStream(body, bufferSize, 4, { blobHTTPHeaders: { blobContentType: contentType }, abortSignal: opts.signal, conditions })).catch((e) =>
      Promise.reject(conditionRefused(e, path, opts)),
    );
    return this.stat(path);
  }

  protected async putMarker(key: string): Promise<void> {
    await this.call(key, () => this.container.getBlockBlobClient(key).upload('', 0));
  }

  protected async objectsBelow(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    await this.call(prefix, async () => {
      for await (const b of this.container.listBlobsFlat({ prefix })) out.push({ key: b.name, size: b.properties.contentLength ?? 0 });
    });
    return out;
  }

  protected async deleteObjects(names: string[]): Promise<void> {
    await inParallel(names, 8, (n) => this.call(n, () => this.container.deleteBlob(n)));
  }

  /** Server-side Copy Blob (same account, so the shared key or SAS authorizes the source). */
  protected async copyObject(from: string, to: string): Promise<void> {
    const source = this.container.getBlobClient(from);
    await this.call(from, async () => {
      const poller = await this.container.getBlobClient(to).beginCopyFromURL(source.url, { intervalInMs: 200 });
      const result = await poller.pollUntilDone();
      if (result.copyStatus && result.copyStatus !== 'success') throw new ServiceError('upstream_error', `Azure could not copy "${from}": ${result.copyStatus}`);
    });
  }

  // ---- multipart -----------------------------------------------------------------------------

  private chunkWriter(path: string, state: { partSize: number }): ChunkWriter {
    if (typeof state?.partSize !== 'number') throw new ServiceError('invalid_parameters', 'This multipart state does not belong to Azure.');
    const blob = this.container.getBlockBlobClient(this.key(path));
    return {
      partSize: state.partSize,
      parallel: true,
      state: { partSize: state.partSize },
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
