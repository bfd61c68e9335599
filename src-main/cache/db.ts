/**
 * The SQLite cache: better-sqlite3, WAL, STRICT tables, foreign keys on, and a migration ladder
 * keyed by `PRAGMA user_version`. Migrations are the files `migrations/NNNN-name.ts` (steps of
 * 10), found at build time and applied in order, each in its own transaction.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

export interface Migration {
  version: number;
  name: string;
  up(db: Db): void;
}

const modules = import.meta.glob<{ up: (db: Db) => void }>('./migrations/[0-9][0-9][0-9][0-9]-*.ts', { eager: true });

export const MIGRATIONS: Migration[] = Object.entries(modules)
  .map(([file, mod]) => {
    const m = /(\d{4})-([^/]+)\.ts$/.exec(file)!;
    return { version: Number(m[1]), name: m[2], up: mod.up };
  })
  .sort((a, b) => a.version - b.version);

/** Opens (creating if needed) the database at `file` (':memory:' for tests) and migrates it. */
export function openDb(file: string, options: { upTo?: number } = {}): Db {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    ownerOnly(file);
  }
  // `npm start` runs Electron with a better-sqlite3 built for Electron's ABI; the one in
  // node_modules is built for Node (serve, tests). Installers rebuild it in place instead.
  const binding = process.env.TRIBUTARY_SQLITE_BINDING;
  const db = new Database(file, binding ? { nativeBinding: binding } : {});
  db.pragma('journal_mode = WAL');
  // SQLite gives its -wal and -shm files the database file's mode; an install from before may
  // have left them readable by others.
  if (file !== ':memory:') for (const f of [`${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db, options.upTo);
  return db;
}

/**
 * The database holds sealed credentials, mail and file names: readable by its owner only,
 * whatever the umask, and also when an older install created it with the umask's mode.
 */
function ownerOnly(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
}

export function migrate(db: Db, upTo = Infinity): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const m of MIGRATIONS) {
    if (m.version <= current || m.version > upTo) continue;
    db.transaction(() => {
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

export const nowIso = () => new Date().toISOString();

const statements = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * A prepared statement kept for the life of the connection, for queries run on every request
 * (preparing costs more than running a short query). Not for statements whose mode is changed
 * (pluck, raw, expand) or that run again while one of their iterations is open.
 */
export function statement(db: Db, sql: string): Database.Statement {
  let byText = statements.get(db);
  if (!byText) statements.set(db, (byText = new Map()));
  let s = byText.get(sql);
  if (!s) byText.set(sql, (s = db.prepare(sql)));
  return s;
}
