/**
 * The "connect account" form is generated from each connector's options schema
 * (docs/connectors.md). Checked against every registered connector, through the same JSON Schema
 * the renderer receives from `connectors.list`: every option becomes a field, secret options become
 * password inputs, and a field is required only when the user must fill it.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src-main/app';
import { connectorDefinition, secretFields } from '../../src-main/connectors/registry';
import { scratchDir } from '../servers/util';

// The renderer's own module, loaded at run time: it belongs to the web TypeScript project, and
// a static import would pull it into the node project (TS6307).
type FieldsOf = (schema: Record<string, unknown>) => { key: string; label: string; kind: string; required: boolean; defaultValue?: unknown }[];
const RENDERER_SCHEMA = '../../src-renderer/src/features/accounts/schema.ts';
let fieldsOf: FieldsOf;

describe('connect-account form from connector schemas (docs/connectors.md)', () => {
  let dir: string;
  let app: App;

  beforeAll(async () => {
    ({ fieldsOf } = (await import(/* @vite-ignore */ RENDERER_SCHEMA)) as { fieldsOf: FieldsOf });
    dir = scratchDir('connect-form');
    app = await createApp({ dataDir: dir, defaultLocalFolder: false });
  });
  afterAll(async () => {
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('turns every option into a field and every secret into a password input', () => {
    const connectors = app.accounts.connectors();
    expect(connectors.length).toBeGreaterThan(1);
    let secrets = 0;
    for (const c of connectors) {
      const fields = fieldsOf(c.form);
      const props = Object.keys((c.form.properties ?? {}) as object);
      expect(fields.map((f) => f.key), c.id).toEqual(props);
      for (const key of secretFields(connectorDefinition(c.id))) {
        secrets++;
        expect(fields.find((f) => f.key === key)?.kind, `${c.id}.${key}`).toBe('password');
      }
      for (const f of fields) {
        expect(f.label.length, `${c.id}.${f.key} label`).toBeGreaterThan(0);
        if (f.defaultValue !== undefined) expect(f.required, `${c.id}.${f.key} has a default`).toBe(false);
      }
    }
    // At least one connector must have credentials, or this test proves nothing about them.
    expect(secrets).toBeGreaterThan(0);
  });

  it('marks a required option without default as required, and uses the schema title', () => {
    const local = app.accounts.connectors().find((c) => c.id === 'local')!;
    const path = fieldsOf(local.form).find((f) => f.key === 'path')!;
    expect(path).toMatchObject({ kind: 'text', required: true, label: 'Folder' });
  });
});
