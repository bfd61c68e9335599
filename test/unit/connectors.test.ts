// Every connector folder loads and registers a well-formed definition (architecture: "a
// connector is one folder; adding one touches the registry and nothing else").
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src-main/connectors/all';
import { allConnectors } from '../../src-main/connectors/registry';

describe('connector registry', () => {
  it('loads every connector folder without failure', async () => {
    const failures = await loadConnectors();
    expect(failures.map((f) => `${f.folder}: ${String(f.error)}`)).toEqual([]);
    expect(allConnectors().map((c) => c.id)).toEqual(expect.arrayContaining(['memory']));
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
