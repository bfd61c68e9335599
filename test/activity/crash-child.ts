/**
 * Child process for the crash test: the real app + activity backend following one local folder.
 * Run with `node scripts/run-ts.mjs test/activity/crash-child.ts <dataDir> <folder>`; prints
 * READY once the follower watches, then runs until killed.
 */
import { createApp } from '../../src-main/app';

export async function main([dataDir, folder]: string[]): Promise<void> {
  const app = await createApp({ dataDir: dataDir!, defaultLocalFolder: false });
  const activity = app.activity;
  let account = app.accounts.list()[0];
  if (!account) {
    account = await app.accounts.connect({ service: 'local', options: { path: folder } });
    await activity.subscriptions.create(account.id, {});
  }
  await activity.followers.sync();
  for (;;) {
    const s = activity.followers.status()[0];
    if (s?.mode === 'watching') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write('READY\n');
  await new Promise(() => {}); // until SIGKILL
}
