import type { Db } from '../db';

/**
 * A sync pair's "settled" mark (docs/sync.md, "How changes are found"): its last plan was empty
 * with nothing held, and nothing was written since. The first pass after a start then plans
 * nothing when both fresh scans equal the stored ones, as the passes after it do. The database
 * itself clears the mark on any write of the pair's trees or journal, whichever code writes them.
 */
export function up(db: Db): void {
  db.exec(`
    ALTER TABLE sync_pairs ADD COLUMN settled INTEGER NOT NULL DEFAULT 0 CHECK (settled IN (0, 1));
    CREATE TRIGGER sync_tree_insert_unsettles AFTER INSERT ON sync_tree
      WHEN (SELECT settled FROM sync_pairs WHERE id = NEW.pair_id) = 1
      BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = NEW.pair_id; END;
    CREATE TRIGGER sync_tree_update_unsettles AFTER UPDATE ON sync_tree
      WHEN (SELECT settled FROM sync_pairs WHERE id IN (OLD.pair_id, NEW.pair_id) AND settled = 1) = 1
      BEGIN UPDATE sync_pairs SET settled = 0 WHERE id IN (OLD.pair_id, NEW.pair_id); END;
    CREATE TRIGGER sync_tree_delete_unsettles AFTER DELETE ON sync_tree
      WHEN (SELECT settled FROM sync_pairs WHERE id = OLD.pair_id) = 1
      BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = OLD.pair_id; END;
    CREATE TRIGGER sync_journal_insert_unsettles AFTER INSERT ON sync_journal
      WHEN (SELECT settled FROM sync_pairs WHERE id = NEW.pair_id) = 1
      BEGIN UPDATE sync_pairs SET settled = 0 WHERE id = NEW.pair_id; END;
  `);
}
