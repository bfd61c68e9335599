/**
 * Handlers of the `sync.*` procedures (contract/sync.ts) over SyncEngine, spread into
 * rpc/handlers.ts beside the other procedures.
 */
import type { z } from 'zod';
import type { syncProcedures } from '../contract/sync';
import type { SyncEngine } from '../sync/engine';

type P = typeof syncProcedures;
export type SyncHandlers = { [K in keyof P]: (input: z.output<P[K]['input']>) => Promise<z.output<P[K]['output']>> };

export function syncHandlers(engine: SyncEngine): SyncHandlers {
  const view = (id: number) => {
    const p = engine.status().find((x) => x.id === id);
    if (!p) throw new Error(`sync pair ${id} vanished`);
    const { created: _created, allowDeletes: _allow, ...rest } = p;
    return rest;
  };
  return {
    'sync.pairs.list': async () => engine.status().map((p) => view(p.id)),
    'sync.pairs.create': async (input) => view((await engine.create(input)).id),
    'sync.pairs.remove': async ({ id }) => (await engine.remove(id), {}),
    'sync.pairs.pause': async ({ id }) => (await engine.pause(id), view(id)),
    'sync.pairs.resume': async ({ id }) => (engine.resume(id), view(id)),
    'sync.pairs.rescan': async ({ id }) => {
      engine.store.pair(id);
      void engine.run(id).catch(() => {});
      return view(id);
    },
    'sync.pairs.confirm': async ({ id }) => {
      engine.store.pair(id);
      void engine.confirm(id).catch(() => {});
      return view(id);
    },
    'sync.conflicts.list': async ({ pair }) => engine.store.conflicts(pair),
    'sync.conflicts.resolve': async ({ id, keep }) => (await engine.resolve(id, keep), {}),
  };
}
