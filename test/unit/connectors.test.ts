// Every connector folder loads and registers a well-formed definition (architecture: "a
// connector is one folder; adding one touches the registry and nothing else").
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { allConnectors } from '../../src-main/connectors/registry';
import type { ConnectorDefinition } from '../../src-main/connectors/types';

describe('connector registry', () => {
  it('loads every connector folder without failure', async () => {
    const failures = await loadConnectors();
    expect(failures.map((f) => `${f.folder}: ${String(f.error)}`)).toEqual([]);
    expect(allConnectors().map((c) => c.id)).toEqual(expect.arrayContaining(['memory']));
  });
  it('a folder registered by its definition.ts (SDK loaded on first use) has the same definition in its index.ts', async () => {
    await loadConnectors();
    const light = import.meta.glob<{ default: ConnectorDefinition }>('../../src-main/connectors/*/definition.ts');
    expect(Object.keys(light).length).toBeGreaterThan(0);
    for (const [file, load] of Object.entries(light)) {
      const registered = (await load()).default;
      const full = (await import(/* @vite-ignore */ file.replace(/definition\.ts$/, 'index.ts'))).default as ConnectorDefinition;
      expect(allConnectors()).toContain(registered);
      expect({ ...full, create: undefined }).toEqual({ ...registered, create: undefined });
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
