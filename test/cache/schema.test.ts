// The schema a fresh migration run creates (sqlite_master after every step of
// src-main/cache/migrations/), compared with the committed test/cache/schema.sql, so that any
// change to the database's shape shows up in review as a diff of that file.
// After adding or changing a migration, regenerate it with:
//   UPDATE_SCHEMA=1 npx vitest run test/cache/schema.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, openDb, type Db } from '../../src-main/cache/db';

const SNAPSHOT = join(import.meta.dirname, 'schema.sql');

/** `CREATE TABLE t (a, b, ...)` with one column or constraint per line; whitespace collapsed. */
function format(sql: string): string {
  const flat = sql.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim();
  if (!/^CREATE (VIRTUAL )?TABLE/i.test(flat)) return flat;
  const open = flat.indexOf('(');
  let depth = 0;
  let close = -1;
  const parts: string[] = [];
  let start = open + 1;
  for (let i = open; i < flat.length && close < 0; i++) {
    const ch = flat[i];
    if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) close = i;
    else if (ch === ',' && depth === 1) {
      parts.push(flat.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(flat.slice(start, close).trim());
  return `${flat.slice(0, open).trim()} (\n${parts.map((p) => `  ${p}`).join(',\n')}\n)${flat.slice(close + 1)}`;
}

/** sqlite_master of `db`, normalised: every object in a stable order, SQL formatted alike. */
function schemaOf(db: Db): string {
  const rows = db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name")
    .all() as { type: string; name: string; sql: string }[];
  const header = `-- Generated from a fresh migration run (user_version ${db.pragma('user_version', { simple: true })}); see test/cache/schema.test.ts.\n`;
  return header + rows.map((r) => `${format(r.sql)};\n`).join('\n');
}

describe('database schema (src-main/cache/migrations)', () => {
  it('a fresh migration run creates exactly the committed test/cache/schema.sql', () => {
    const db = openDb(':memory:');
    const schema = schemaOf(db);
    db.close();
    expect(schema).toContain(`user_version ${MIGRATIONS.at(-1)!.version})`);
    if (process.env.UPDATE_SCHEMA) writeFileSync(SNAPSHOT, schema);
    expect(schema, 'the schema changed: regenerate test/cache/schema.sql (see the top of this file) and review its diff').toBe(readFileSync(SNAPSHOT, 'utf8'));
  });
});
