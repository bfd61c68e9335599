/** Shared setup for the activity tests: a real app on a scratch data dir plus ActivityService. */
import { rmSync } from 'node:fs';
import { createApp, type App } from '../../src-main/app';
import type { ActivityOptions, ActivityService } from '../../src-main/activity';
import type { ActivityChange } from '../../src-main/activity/types';
import { scratchDir } from '../servers/util';

export { until } from '../servers/util';

export interface Harness {
  app: App;
  activity: ActivityService;
  dir: string;
  close(): Promise<void>;
}

export async function makeHarness(options: Partial<ActivityOptions> = {}, dir = scratchDir('activity')): Promise<Harness> {
  const { signingKey, ...activityOptions } = options;
  const app = await createApp({ dataDir: dir, defaultLocalFolder: false, signingKey, activity: activityOptions });
  const activity = app.activity;
  return {
    app,
    activity,
    dir,
    async close() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `n` synthetic file changes (as a follower would produce them), paths numbered from `start`. */
export function generated(n: number, start = 0): ActivityChange[] {
  return Array.from({ length: n }, (_, i) => {
    const k = start + i;
    const path = `/gen/file-${k}.txt`;
    return { type: k % 3 === 0 ? 'add' : 'update', kind: 'file', path, metadata: { path, name: `file-${k}.txt`, kind: 'file', size: k, modified: new Date(1_700_000_000_000 + k).toISOString(), created: null } };
  });
}

