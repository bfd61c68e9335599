// Every connector folder loads and registers a well-formed definition (architecture: "a
// connector is one folder; adding one touches the registry and nothing else").
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { allConnectors } from '../../src-main/connectors/registry';
import type { ConnectorDefinition } from '../../src-main/connectors/types';
import { scratchDir } from '../servers/util';

describe('connector registry', () => {
  it('loads every connector folder without failure', async () => {
    const failures = await loadConnectors();
    expect(failures.map((f) => `${f.folder}: ${String(f.error)}`)).toEqual([]);
    expect(allConnectors().map((c) => c.id)).toEqual(expect.arrayContaining(['memory']));
  });
  it('a folder registered by its definition.ts (SDK loaded on first use) creates its connector from index.ts on first use', async () => {
    await loadConnectors();
    const light = import.meta.glob<{ default: ConnectorDefinition }>('../../src-main/connectors/*/definition.ts');
    // Options that make a connector without contacting anything (constructors do not connect).
    const samples: Record<string, unknown> = {
      s3: { accessKeyId: 'a', secretAccessKey: 'b', bucket: 'x', endpoint: 'http://127.0.0.1:9' },
      azure: { connectionString: 'UseDevelopmentStorage=true', container: 'c' },
      sftp: { host: '127.0.0.1', username: 'u', password: 'p' },
      webdav: { protocol: 'http', host: '127.0.0.1', port: 9, username: 'u', password: 'p' },
      smb: { host: '127.0.0.1', share: 's' },
    };
    expect(Object.keys(light).length).toBeGreaterThan(0);
    for (const load of Object.values(light)) {
      const registered = (await load()).default;
      expect(allConnectors()).toContain(registered);
      expect(samples[registered.id], `sample options for ${registered.id}`).toBeDefined();
      const connector = await registered.create(registered.options.parse(samples[registered.id]), { dataDir: scratchDir('lazy-connector'), accountId: 1 });
      expect(typeof (connector as { list?: unknown }).list).toBe('function');
    }
  });
  it('gives every connector an id, a name and a form schema', async () => {
    await loadConnectors();
    for (const def of allConnectors()) {
      expect(def.id).toMatch(/^[a-z0-9_]+$/);
      expect(def.name.length).toBeGreaterThan(0);
      expect(() => z.toJSONSchema(def.options, { io: 'input', unrepresentable: 'any' })).not.toThrow();
    }
  });
});
