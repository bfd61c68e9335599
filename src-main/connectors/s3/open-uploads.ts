/**
 * Multipart uploads that `write` starts (through lib-storage's `Upload`), recorded one file each
 * in `<dataDir>/connectors/s3/uploads/` from CreateMultipartUpload until it is completed or
 * aborted. A process killed mid-write loses the upload id and S3 keeps (and bills) its parts
 * forever; S3's own list of open uploads cannot tell ours from anyone else's. The account's next
 * instance aborts every upload an earlier process recorded. The uploader's resumable sessions
 * (`openChunkWriter`) are not recorded here: the uploader resumes or expires them itself.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface OpenUpload {
  bucket: string;
  key: string;
  uploadId: string;
  account: number;
  startedAt: string;
  /** The process that started it: an instance never aborts what its own process is still sending. */
  process: string;
}

/** Identifies this process run (a pid can be reused after a restart). */
const PROCESS = randomUUID();

export class OpenUploads {
  private readonly dir: string;

  constructor(
    dataDir: string,
    private readonly account: number,
  ) {
    this.dir = join(dataDir, 'connectors', 's3', 'uploads');
  }

  /**
   * Records an upload durably (file and folder fsynced) before its first part is sent; returns the
   * record's name for `remove`.
   */
  async add(u: { bucket: string; key: string; uploadId: string }): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const name = `${this.account}-${randomUUID()}.json`;
    const record: OpenUpload = { ...u, account: this.account, startedAt: new Date().toISOString(), process: PROCESS };
    const file = await open(join(this.dir, name), 'wx', 0o600);
    try {
      await file.writeFile(JSON.stringify(record));
      await file.sync();
    } finally {
      await file.close();
    }
    await syncDir(this.dir);
    return name;
  }

  /**
   * Not fsynced: a removal lost to a crash leaves a record whose abort answers NoSuchUpload,
   * which counts as done.
   */
  async remove(name: string): Promise<void> {
    await unlink(join(this.dir, name)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }

  /** This account's records left by earlier processes (a torn record, from a crash mid-write, is dropped). */
  async abandoned(): Promise<{ name: string; upload: OpenUpload }[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: { name: string; upload: OpenUpload }[] = [];
    for (const name of names.filter((n) => n.startsWith(`${this.account}-`) && n.endsWith('.json'))) {
      let upload: OpenUpload;
      try {
        upload = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as OpenUpload;
      } catch (e) {
        // Written and fsynced before the first part: a record that does not parse never had parts sent.
        if (e instanceof SyntaxError) await this.remove(name);
        continue;
      }
      if (upload.process !== PROCESS && upload.account === this.account) out.push({ name, upload });
    }
    return out;
  }
}

async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
