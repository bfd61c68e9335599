/**
 * Registers every backend Tributary ships: each folder beside this file, by the
 * ConnectorDefinition its definition.ts (SDK loaded on first use) or else its index.ts
 * default-exports. Adding a connector is adding its folder; nothing else
 * in Tributary names a concrete backend. Loading is isolated per connector: one that fails to
 * load (a broken native dependency, say) is reported and left out instead of taking every
 * other account down with it; test/unit/connectors.test.ts fails on any such failure.
 */
import { register } from './registry';
import type { ConnectorDefinition } from './types';

type Loader = () => Promise<{ default: ConnectorDefinition }>;
/**
 * A folder with a `definition.ts` registers that: the definition without the implementation,
 * whose `create` imports the folder's index.ts (and the SDK behind it) on first use. Others
 * register their index.ts.
 */
const light = import.meta.glob<{ default: ConnectorDefinition }>('./*/definition.ts');
const loaders: Record<string, Loader> = {};
for (const [file, load] of Object.entries(import.meta.glob<{ default: ConnectorDefinition }>('./*/index.ts'))) {
  loaders[file] = light[file.replace(/index\.ts$/, 'definition.ts')] ?? load;
}

export interface LoadFailure {
  folder: string;
  error: unknown;
}

let loading: Promise<LoadFailure[]> | undefined;

export function loadConnectors(): Promise<LoadFailure[]> {
  loading ??= (async () => {
    const failures: LoadFailure[] = [];
    const results = await Promise.allSettled(Object.entries(loaders).map(async ([file, load]) => ({ file, mod: await load() })));
    for (const [i, r] of results.entries()) {
      const folder = Object.keys(loaders)[i].split('/')[1];
      if (r.status === 'rejected') failures.push({ folder, error: r.reason });
      else register(r.value.mod.default);
    }
    return failures;
  })();
  return loading;
}
