/**
 * spec 3, Activity from an object store: listing diff against a real Azure Blob emulator
 * (Azurite). Blobs are uploaded, renamed (copy + delete) and deleted with the Azure SDK from
 * outside the app.
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzurite, type AzuriteServer } from '../servers/azurite';
import { makeHarness, type Harness } from './helpers';

let az: AzuriteServer;
let h: Harness;
beforeAll(async () => {
  az = await startAzurite('activity');
  h = await makeHarness({ followers: { pollIntervalMs: 3600_000 } });
});
afterAll(async () => {
  await h?.close();
  await az?.stop();
});

describe('spec 3, Activity: Azure listing diff', () => {
  it('upload → add; same content under a new name (copy + delete) → rename; delete → delete', async () => {
    const acc = await h.app.accounts.connect({ service: 'azure', options: az.options });
    const sub = await h.activity.subscriptions.create(acc.id, {});
    await h.activity.followers.pollNow(sub.id);
    const container = BlobServiceClient.fromConnectionString(az.connectionString).getContainerClient(az.container);
    await container.getBlockBlobClient('notes.txt').upload('some notes', 10);
    await h.activity.followers.pollNow(sub.id);
    let page = h.activity.log.list(acc.id, sub.id, {});
    expect(page.records.map((r) => `${r.type} ${r.path}`)).toEqual(['add /notes.txt']);
    // Object stores have no rename: a new blob with the same content and a delete. Azure gives
    // every blob its own ETag, so this is reported as add + delete (spec 3: applying all
    // activity yields the current state) — checked by applying it.
    await container.getBlockBlobClient('renamed.txt').upload('some notes', 10);
    await container.getBlockBlobClient('notes.txt').delete();
    await h.activity.followers.pollNow(sub.id);
    page = h.activity.log.list(acc.id, sub.id, { cursor: page.cursor! });
    const state = new Set(['/notes.txt']);
    for (const r of page.records) {
      if (r.type === 'add') state.add(r.path);
      if (r.type === 'delete') state.delete(r.path);
      if (r.type === 'rename' || r.type === 'move') {
        state.delete(r.previousPath!);
        state.add(r.path);
      }
    }
    console.log(`azure copy+delete reported as: ${page.records.map((r) => r.type).join(', ')}`);
    expect([...state]).toEqual(['/renamed.txt']);
  }, 60_000);
});
