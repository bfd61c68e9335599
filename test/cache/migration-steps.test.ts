// The migration steps 0200, 0210, 0400, 0500, 0530, 0540, 0550, 0560, 0570, 0580, 0630 and 0850 (src-main/cache/migrations/): each is applied
// on a database holding data written at the version before it, which must survive the step
// unchanged, and the new tables keep their constraints and cascade with the account.
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate, openDb, type Db } from '../../src-main/cache/db';

/** A database at `version` with one account (id 1), as a user upgrading from there has. */
function dbAt(version: number): Db {
  const db = openDb(':memory:', { upTo: version });
  expect(db.pragma('user_version', { simple: true })).toBe(version);
  db.prepare("INSERT INTO accounts (service, account, options, created, modified) VALUES ('memory', 'a', x'00', 'c', 'm')").run();
  return db;
}

const count = (db: Db, table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();

describe('migration steps keep the data of the version before them', () => {
  // spec 1, Multipart upload / Multipart session
  it('0200-multipart: accounts, listings, keys and links survive; sessions and parts cascade', () => {
    const db = dbAt(110);
    db.prepare("INSERT INTO entries (account_id, path, parent, name, kind, size, seen_at) VALUES (1, '/a.txt', '/', 'a.txt', 'file', 3, 's')").run();
    db.prepare("INSERT INTO api_keys (name, key_hash, prefix, created, modified) VALUES ('k', 'h', 'p', 'c', 'm')").run();
    db.prepare("INSERT INTO links (id, token, account_id, file_id, created, modified) VALUES ('l1', 'tok', 1, 'f', 'c', 'm')").run();
    const before = {
      entries: db.prepare('SELECT * FROM entries').all(),
      keys: db.prepare('SELECT * FROM api_keys').all(),
      links: db.prepare('SELECT * FROM links').all(),
    };
    migrate(db, 200);
    expect(db.pragma('user_version', { simple: true })).toBe(200);
    expect({ entries: db.prepare('SELECT * FROM entries').all(), keys: db.prepare('SELECT * FROM api_keys').all(), links: db.prepare('SELECT * FROM links').all() }).toEqual(before);

    const session = db.prepare(
      "INSERT INTO multipart_sessions (account_id, parent_path, name, path, overwrite, size, part_size, parallel, mode, created, updated) VALUES (1, '/', 'big.bin', '/big.bin', 0, 20, 10, 1, ?, 'c', 'u')",
    );
    session.run('spool');
    expect(() => session.run('other')).toThrow(/CHECK/);
    const part = db.prepare("INSERT INTO multipart_parts (session_id, part_number, size, created) VALUES (1, ?, 10, 'c')");
    part.run(1);
    part.run(2);
    expect(() => part.run(1)).toThrow(/UNIQUE|PRIMARY KEY/);
    expect(() => part.run(10_001)).toThrow(/CHECK/);
    db.prepare('DELETE FROM accounts').run();
    expect([count(db, 'multipart_sessions'), count(db, 'multipart_parts'), count(db, 'entries'), count(db, 'links')]).toEqual([0, 0, 0, 0]);
    db.close();
  });

  // docs/uploads.md, The uploader: a new process resumes every job still `running`
  it('0210-upload-jobs: an open multipart session and its parts survive; upload_jobs checks its states', () => {
    const db = dbAt(200);
    db.prepare(
      "INSERT INTO multipart_sessions (account_id, parent_path, name, path, overwrite, size, part_size, parallel, mode, writer_state, created, updated) VALUES (1, '/', 'big.bin', '/big.bin', 0, 20, 10, 1, 'native', '{\"uploadId\":\"u1\"}', 'c', 'u')",
    ).run();
    db.prepare("INSERT INTO multipart_parts (session_id, part_number, size, etag, created) VALUES (1, 1, 10, 'e1', 'c')").run();
    const before = [db.prepare('SELECT * FROM multipart_sessions').all(), db.prepare('SELECT * FROM multipart_parts').all()];
    migrate(db, 210);
    expect(db.pragma('user_version', { simple: true })).toBe(210);
    expect([db.prepare('SELECT * FROM multipart_sessions').all(), db.prepare('SELECT * FROM multipart_parts').all()]).toEqual(before);

    const job = db.prepare(
      "INSERT INTO upload_jobs (account_id, parent_id, name, local_path, size, mtime_ms, overwrite, session_id, state, verified, created, updated) VALUES (1, 'root', 'big.bin', '/tmp/big.bin', 20, 1, 0, 1, ?, ?, 'c', 'u')",
    );
    job.run('running', null);
    job.run('done', 'multipart-etag');
    expect(() => job.run('paused', null)).toThrow(/CHECK/); // admitted only from 0520 on
    expect(() => job.run('done', 'crc32')).toThrow(/CHECK/);
    expect(db.prepare("SELECT name, session_id, state FROM upload_jobs WHERE state = 'running'").all()).toEqual([{ name: 'big.bin', session_id: 1, state: 'running' }]);
    db.prepare('DELETE FROM accounts').run();
    expect(count(db, 'upload_jobs')).toBe(0);
    db.close();
  });

  // spec 3, Subscription / Activity / JSON webhook
  it('0400-activity: the mail cache survives; one subscription per account, activity cascades', () => {
    const db = dbAt(300);
    db.prepare("INSERT INTO mail_folders (account_id, path, name, delimiter, uidvalidity) VALUES (1, 'INBOX', 'INBOX', '/', 7)").run();
    const folders = db.prepare('SELECT * FROM mail_folders').all();
    const upload = db.prepare(
      "INSERT INTO upload_jobs (account_id, parent_id, name, local_path, size, mtime_ms, overwrite, state, created, updated) VALUES (1, 'root', 'f', '/tmp/f', 1, 1, 0, 'failed', 'c', 'u')",
    );
    upload.run();
    migrate(db, 400);
    expect(db.pragma('user_version', { simple: true })).toBe(400);
    expect(db.prepare('SELECT * FROM mail_folders').all()).toEqual(folders);
    expect(db.prepare('SELECT name, state FROM upload_jobs').all()).toEqual([{ name: 'f', state: 'failed' }]);

    const subscribe = db.prepare("INSERT INTO activity_subscriptions (account_id, subscription_type, expiry, created, modified) VALUES (1, ?, 'e', 'c', 'm')");
    subscribe.run('changes');
    expect(() => subscribe.run('crawl')).toThrow(/UNIQUE/);
    expect(db.prepare('SELECT crawl_type, monitored_resources, active, is_default FROM activity_subscriptions').get()).toEqual({ crawl_type: 'external', monitored_resources: '[]', active: 1, is_default: 1 });
    const record = db.prepare("INSERT INTO activity (account_id, subscription_id, type, kind, path, recorded_at) VALUES (1, 1, ?, 'file', '/a', 'r')");
    record.run('add');
    expect(() => record.run('touch')).toThrow(/CHECK/);
    db.prepare("INSERT INTO activity_webhooks (url, format, account_id, created) VALUES ('http://127.0.0.1:1/h', 'json', 1, 'c')").run();
    db.prepare("INSERT INTO activity_webhook_attempts (webhook_id, kind, at, ok, duration_ms) VALUES (1, 'test', 'a', 1, 3)").run();
    db.prepare('DELETE FROM accounts').run();
    expect(['activity_subscriptions', 'activity', 'activity_webhooks', 'activity_webhook_attempts'].map((t) => count(db, t))).toEqual([0, 0, 0, 0]);
    db.close();
  });

  // spec 3, JSON webhook: signatures need the key itself; older keys keep authenticating
  it('0500-api-key-secrets: existing keys keep their hash and state, with no sealed copy', () => {
    const db = dbAt(400);
    const key = db.prepare("INSERT INTO api_keys (name, key_hash, prefix, active, created, modified, last_used) VALUES (?, ?, 'p', ?, 'c', 'm', ?)");
    key.run('old', 'h1', 1, 'yesterday');
    key.run('revoked', 'h2', 0, null);
    const before = db.prepare('SELECT * FROM api_keys ORDER BY id').all() as Record<string, unknown>[];
    migrate(db, 500);
    expect(db.pragma('user_version', { simple: true })).toBe(500);
    expect(db.prepare('SELECT * FROM api_keys ORDER BY id').all()).toEqual(before.map((k) => ({ ...k, sealed: null })));
    db.prepare("INSERT INTO api_keys (name, key_hash, prefix, sealed, created, modified) VALUES ('new', 'h3', 'p', x'0102', 'c', 'm')").run();
    expect(db.prepare("SELECT hex(sealed) FROM api_keys WHERE name = 'new'").pluck().get()).toBe('0102');
    expect(() => db.prepare("UPDATE api_keys SET sealed = 'text' WHERE name = 'new'").run()).toThrow(/cannot store TEXT value in BLOB/);
    db.close();
  });

  // spec 3, Activity v1/v2: an activity's time is when Tributary learned of it (recorded_at)
  it('0530-activity-time: stored activity survives without the occurred_at column', () => {
    const db = dbAt(520);
    db.prepare("INSERT INTO activity_subscriptions (account_id, subscription_type, expiry, created, modified) VALUES (1, 'changes', 'e', 'c', 'm')").run();
    db.prepare(
      "INSERT INTO activity (account_id, subscription_id, type, api, kind, path, occurred_at, recorded_at) VALUES (1, 1, 'rename', 'storage', 'file', '/b.txt', '2020-01-01T00:00:00.000Z', '2026-11-24T00:00:00.000Z')",
    ).run();
    const keep = 'SELECT seq, account_id, subscription_id, type, api, kind, path, recorded_at FROM activity';
    const before = db.prepare(keep).all();
    migrate(db, 530);
    expect(db.pragma('user_version', { simple: true })).toBe(530);
    expect(db.prepare(keep).all()).toEqual(before);
    expect((db.prepare('PRAGMA table_info(activity)').all() as { name: string }[]).map((c) => c.name)).not.toContain('occurred_at');
    db.close();
  });

  // spec 1, Account: retrieve_tokens reads back the refresh_token an import gave
  it('0540-import-credentials: accounts survive and gain an empty import_credentials', () => {
    const db = dbAt(530);
    const before = db.prepare('SELECT * FROM accounts').all();
    migrate(db, 540);
    expect(db.pragma('user_version', { simple: true })).toBe(540);
    expect(db.prepare('SELECT * FROM accounts').all()).toEqual((before as Record<string, unknown>[]).map((r) => ({ ...r, import_credentials: null })));
    db.close();
  });

  // spec 1, Recent files: ties and whole-second times use when Tributary learned of a version
  it('0550-entries-learned-at: cached entries survive; learned_at starts as seen_at', () => {
    const db = dbAt(540);
    db.prepare("INSERT INTO entries (account_id, path, parent, name, kind, size, modified, seen_at) VALUES (1, '/a.txt', '/', 'a.txt', 'file', 3, '2026-01-01T00:00:00.000Z', '2026-02-02T00:00:00.000Z')").run();
    const before = db.prepare('SELECT * FROM entries').all() as Record<string, unknown>[];
    migrate(db, 550);
    expect(db.pragma('user_version', { simple: true })).toBe(550);
    expect(db.prepare('SELECT * FROM entries').all()).toEqual(before.map((r) => ({ ...r, learned_at: r.seen_at })));
    db.close();
  });
  // spec 3, Event-bus event: delivery targets and where each subscription's delivery stands
  it('0560-event-bus-delivery: webhooks and activity survive; buses cascade with their account, the queue with its bus', () => {
    const db = dbAt(550);
    db.prepare("INSERT INTO activity_webhooks (url, format, account_id, created) VALUES ('http://x/', 'json', 1, 'c')").run();
    const before = db.prepare('SELECT * FROM activity_webhooks').all();
    migrate(db, 560);
    expect(db.pragma('user_version', { simple: true })).toBe(560);
    expect(db.prepare('SELECT * FROM activity_webhooks').all()).toEqual(before);
    db.prepare("INSERT INTO activity_event_buses (account_id, region, event_bus_name, source, created) VALUES (1, 'us-east-1', 'b', 's', 'c')").run();
    db.prepare("INSERT INTO activity_event_buses (account_id, region, event_bus_name, source, created) VALUES (NULL, 'us-east-1', 'all', 's', 'c')").run();
    const queue = db.prepare('INSERT INTO activity_event_bus_queue (bus_id, account_id, subscription_id, delivered_seq, attempts, next_attempt_at) VALUES (?, 1, 7, 0, ?, 0)');
    queue.run(1, 0);
    queue.run(2, 0);
    expect(() => queue.run(1, 0)).toThrow(/UNIQUE|PRIMARY KEY/);
    expect(() => db.prepare("INSERT INTO activity_event_bus_queue (bus_id, account_id, subscription_id, delivered_seq, attempts, next_attempt_at) VALUES (2, 1, 8, 0, -1, 0)").run()).toThrow(/CHECK/);
    db.prepare('DELETE FROM accounts').run();
    // The account's own bus and its queue go; the bus for every account stays.
    expect(db.prepare('SELECT event_bus_name FROM activity_event_buses').pluck().all()).toEqual(['all']);
    expect(db.prepare('SELECT bus_id FROM activity_event_bus_queue').pluck().all()).toEqual([2]);
    db.close();
  });

  // spec 1, Account `active`: automatic deactivation keeps the reason and the failures in a row
  it('0570-account-health: accounts survive, with no failures counted; the count cannot go negative', () => {
    const db = dbAt(550);
    db.prepare("UPDATE accounts SET active = 0, disable_reason = 'deactivated_by_user'").run();
    const before = db.prepare('SELECT * FROM accounts').all() as Record<string, unknown>[];
    migrate(db, 570);
    expect(db.pragma('user_version', { simple: true })).toBe(570);
    expect(db.prepare('SELECT * FROM accounts').all()).toEqual(before.map((r) => ({ ...r, disable_message: null, unreachable_since: null, unreachable_last: null, unreachable_attempts: 0 })));
    expect(() => db.prepare('UPDATE accounts SET unreachable_attempts = -1').run()).toThrow(/CHECK/);
    db.close();
  });

  // spec 2, Send: the outbox (undo send, send later, retries) keeps the mail cache as it was
  it('0580-mail-outbox: the mail cache survives; outbox rows keep their states and cascade with the account', () => {
    const db = dbAt(550);
    db.prepare("INSERT INTO mail_folders (account_id, path, name) VALUES (1, 'INBOX', 'INBOX')").run();
    db.prepare("INSERT INTO mail_messages (account_id, folder, uidvalidity, uid, thread_id, date_ms) VALUES (1, 'INBOX', 7, 1, 't', 0)").run();
    const before = { folders: db.prepare('SELECT * FROM mail_folders').all(), messages: db.prepare('SELECT * FROM mail_messages').all() };
    migrate(db, 580);
    expect(db.pragma('user_version', { simple: true })).toBe(580);
    expect({ folders: db.prepare('SELECT * FROM mail_folders').all(), messages: db.prepare('SELECT * FROM mail_messages').all() }).toEqual(before);
    const row = db.prepare(
      "INSERT INTO mail_outbox (account_id, state, send_at_ms, next_attempt_ms, message_id, subject, sender, recipients, wire, created, updated) VALUES (1, ?, 0, 0, '<m@x>', 's', 'a@x', '[]', x'00', 'c', 'u')",
    );
    row.run('queued');
    expect(() => row.run('lost')).toThrow(/CHECK/);
    expect(db.prepare('SELECT copy_state FROM mail_outbox').pluck().get()).toBe('pending');
    db.prepare('DELETE FROM accounts WHERE id = 1').run();
    expect(count(db, 'mail_outbox')).toBe(0);
    db.close();
  });
  // docs/sync.md: pairs, their three trees, the journal and the conflicts list cascade with the account
  it('0630-sync: accounts and cached entries survive; sync tables check their values and cascade', () => {
    const db = dbAt(MIGRATIONS.filter((m) => m.version < 630).at(-1)!.version);
    db.prepare("INSERT INTO entries (account_id, path, parent, name, kind, size, seen_at) VALUES (1, '/a.txt', '/', 'a.txt', 'file', 3, 's')").run();
    const before = [db.prepare('SELECT * FROM accounts').all(), db.prepare('SELECT * FROM entries').all()];
    migrate(db, 630);
    expect(db.pragma('user_version', { simple: true })).toBe(630);
    expect([db.prepare('SELECT * FROM accounts').all(), db.prepare('SELECT * FROM entries').all()]).toEqual(before);
    db.prepare("INSERT INTO sync_pairs (local_path, account_id, remote_path, created) VALUES ('/home/me/Sync', 1, '/Sync', 'c')").run();
    expect(() => db.prepare("INSERT INTO sync_pairs (local_path, account_id, remote_path, created) VALUES ('/home/me/Sync', 1, '/Other', 'c')").run()).toThrow(/UNIQUE/);
    expect(() => db.prepare("UPDATE sync_pairs SET state = 'other'").run()).toThrow(/CHECK/);
    const tree = db.prepare("INSERT INTO sync_tree (pair_id, tree, path, kind) VALUES (1, ?, '/x', 'file')");
    tree.run('synced');
    expect(() => tree.run('elsewhere')).toThrow(/CHECK/);
    db.prepare("INSERT INTO sync_journal (pair_id, op, stage, created) VALUES (1, '{}', 'started', 'c')").run();
    db.prepare("INSERT INTO sync_conflicts (pair_id, path, copy_path, created) VALUES (1, '/x', '/x (conflict)', 'c')").run();
    db.prepare('DELETE FROM accounts').run();
    expect(['sync_pairs', 'sync_tree', 'sync_journal', 'sync_conflicts'].map((t) => count(db, t))).toEqual([0, 0, 0, 0]);
    db.close();
  });
  // docs/sync.md, "How changes are found": a pair's settled mark, cleared by any write of its trees or journal
  it('0850-sync-settled: pairs and trees survive unsettled; a tree or journal write clears the mark of its pair only', () => {
    const db = dbAt(MIGRATIONS.filter((m) => m.version < 850).at(-1)!.version);
    const pair = db.prepare("INSERT INTO sync_pairs (local_path, account_id, remote_path, created) VALUES (?, 1, '/', 'c')");
    pair.run('/one');
    pair.run('/two');
    db.prepare("INSERT INTO sync_tree (pair_id, tree, path, kind) VALUES (1, 'local', '/x', 'file')").run();
    const before = [db.prepare('SELECT * FROM sync_pairs').all(), db.prepare('SELECT * FROM sync_tree').all()];
    migrate(db, 850);
    expect(db.pragma('user_version', { simple: true })).toBe(850);
    expect([db.prepare('SELECT * FROM sync_pairs').all().map((r) => ({ ...(r as object), settled: undefined })), db.prepare('SELECT * FROM sync_tree').all()]).toEqual([
      before[0].map((r) => ({ ...(r as object), settled: undefined })),
      before[1],
    ]);
    const marks = () => db.prepare('SELECT settled FROM sync_pairs ORDER BY id').pluck().all();
    expect(marks()).toEqual([0, 0]);
    expect(() => db.prepare('UPDATE sync_pairs SET settled = 2').run()).toThrow(/CHECK/);
    const settle = () => db.prepare('UPDATE sync_pairs SET settled = 1').run();
    for (const write of [
      "INSERT INTO sync_tree (pair_id, tree, path, kind) VALUES (1, 'synced', '/y', 'file')",
      "INSERT OR REPLACE INTO sync_tree (pair_id, tree, path, kind) VALUES (1, 'synced', '/y', 'folder')",
      "UPDATE sync_tree SET hash = 'h' WHERE pair_id = 1 AND path = '/x'",
      "DELETE FROM sync_tree WHERE pair_id = 1 AND path = '/y'",
      "INSERT INTO sync_journal (pair_id, op, stage, created) VALUES (1, '{}', 'started', 'c')",
    ]) {
      settle();
      db.prepare(write).run();
      expect(marks(), write).toEqual([0, 1]);
    }
    db.prepare('DELETE FROM accounts').run();
    expect(count(db, 'sync_pairs')).toBe(0);
    db.close();
  });
});
