/**
 * A model of the two sides of a sync pair and of the synced tree, for testing the planner the way
 * CanopyCheck tests Dropbox's: users change both sides at random, planned batches are applied in
 * a shuffled order, half-applied batches are dropped (a crash), and every version that ever
 * existed is tracked so a loss shows at once.
 *
 * Local files get inodes (kept by renames, new for a file written to a temp name and moved into
 * place); remote files are identified only by a content ETag (like S3) and remote folders not at
 * all, the hardest case for detecting moves.
 */
import { isInside, joinPath, parentOf, ROOT } from '../../src-main/connectors/shared/paths';
import type { Op, Plan, PlanOptions, Side, SideEntry, SyncedEntry, SyncedTree, Tree } from '../../src-main/sync/model';
import { planSync } from '../../src-main/sync/planner';

interface Item {
  kind: 'file' | 'folder';
  content?: string;
  ino: number;
  gen: number;
}

/** A seeded shuffle of a batch (the order operations of one batch finish in is free). */
export function shuffler(seed: number) {
  let x = seed >>> 0 || 1;
  const next = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), x);
  return (ops: Op[]) => {
    const a = [...ops];
    for (let i = a.length - 1; i > 0; i--) {
      const j = next() % (i + 1);
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  };
}

export const NAMES = ['a', 'A', 'b', 'c.txt', 'C.txt', 'e\u0301', '\u00e9', 'd'];

export class World {
  readonly sides: Record<Side, Map<string, Item>> = { local: new Map(), remote: new Map() };
  synced: SyncedTree = new Map();
  readonly trash: string[] = [];
  /** Contents that were present on both sides at some moment (their loss is the user's choice). */
  readonly propagated = new Set<string>();
  readonly created = new Set<string>();
  /** Contents a user overwrote or deleted themselves. */
  readonly userRemoved = new Set<string>();
  readonly violations: string[] = [];
  readonly conflicts: string[] = [];
  pending: Op[] = [];
  /** Everything done to this world, written so that it can be played again (see `settle`). */
  readonly log: string[];
  private counter = 0;
  private ino = 1;
  clock = Date.UTC(2026, 10, 24, 3, 15, 0);

  constructor(
    readonly remoteCaseInsensitive = false,
    readonly remoteHashes = true,
    /** This computer's folder folds case (macOS, Windows). */
    readonly localCaseInsensitive = false,
  ) {
    this.log = [`new World(${remoteCaseInsensitive}, ${remoteHashes}, ${localCaseInsensitive})`];
  }

  // ---- what the scanners see ----------------------------------------------------------------

  scan(side: Side): Tree {
    const t: Tree = new Map();
    for (const [path, it] of this.sides[side]) t.set(path, this.entry(side, path, it));
    return t;
  }

  private entry(side: Side, path: string, it: Item): SideEntry {
    return (
        side === 'local'
          ? { path, kind: it.kind, id: `i:${it.ino}`, ver: it.kind === 'file' ? `${it.ino}:${it.gen}` : 'd', hash: it.content && `h:${it.content}` }
          : it.kind === 'file'
            ? { path, kind: 'file', id: `e:${it.content}`, ver: `e:${it.content}`, hash: this.remoteHashes ? `h:${it.content}` : undefined }
            : { path, kind: 'folder', ver: 'd' }
    );
  }

  options(extra: Partial<PlanOptions> = {}): PlanOptions {
    return { now: new Date(this.clock), remoteCaseInsensitive: this.remoteCaseInsensitive, localCaseInsensitive: this.localCaseInsensitive, allowDeletes: true, allowEmptySide: true, ...extra };
  }

  plan(extra: Partial<PlanOptions> = {}) {
    this.clock += 1000;
    return planSync(this.scan('local'), this.scan('remote'), this.synced, this.options(extra));
  }

  // ---- helpers -------------------------------------------------------------------------------

  private key(side: Side, p: string) {
    return (side === 'remote' ? this.remoteCaseInsensitive : this.localCaseInsensitive) ? p.toLowerCase() : p;
  }
  isFree(side: Side, p: string): boolean {
    const k = this.key(side, p);
    for (const q of this.sides[side].keys()) if (this.key(side, q) === k) return false;
    return true;
  }
  private parentIsFolder(side: Side, p: string) {
    const pp = parentOf(p);
    return pp === ROOT || this.sides[side].get(pp)?.kind === 'folder';
  }
  private subtree(side: Side, p: string): string[] {
    return [...this.sides[side].keys()].filter((q) => q === p || isInside(q, p));
  }
  private newContent() {
    const c = `v${++this.counter}`;
    this.created.add(c);
    return c;
  }
  private afterChange() {
    const local = new Set<string>();
    for (const it of this.sides.local.values()) if (it.content) local.add(it.content);
    for (const it of this.sides.remote.values()) if (it.content && local.has(it.content)) this.propagated.add(it.content);
  }

  // ---- users ---------------------------------------------------------------------------------

  /** One random user action on `side`; `p` are random numbers choosing what and where. */
  user(side: Side, action: number, p: number[]): void {
    this.log.push(`user('${side}', ${action}, [${p}])`);
    const m = this.sides[side];
    const paths = [...m.keys()].sort();
    const folders = [ROOT, ...paths.filter((q) => m.get(q)!.kind === 'folder')];
    const pick = <T>(a: T[], i: number) => a[i % a.length];
    const name = pick(NAMES, p[1]);
    // Weighted: creates, edits and moves are what users do most.
    switch ([0, 0, 1, 2, 2, 3, 4, 4][action % 8]) {
      case 0: {
        const at = joinPath(pick(folders, p[0]), name);
        if (this.isFree(side, at)) m.set(at, { kind: 'file', content: this.newContent(), ino: this.ino++, gen: 0 });
        break;
      }
      case 1: {
        const at = joinPath(pick(folders, p[0]), name);
        if (this.isFree(side, at)) m.set(at, { kind: 'folder', ino: this.ino++, gen: 0 });
        break;
      }
      case 2: {
        const files = paths.filter((q) => m.get(q)!.kind === 'file');
        if (!files.length) break;
        const it = m.get(pick(files, p[0]))!;
        this.userRemoved.add(it.content!);
        it.content = this.newContent();
        it.gen++;
        break;
      }
      case 3: {
        if (!paths.length) break;
        for (const q of this.subtree(side, pick(paths, p[0]))) {
          const c = m.get(q)!.content;
          if (c) this.userRemoved.add(c);
          m.delete(q);
        }
        break;
      }
      case 4: {
        if (!paths.length) break;
        const from = pick(paths, p[0]);
        const dest = pick(folders, p[2]);
        const to = joinPath(dest, p[3] % 2 ? name : from.slice(from.lastIndexOf('/') + 1));
        if (dest === from || isInside(dest, from) || !this.isFree(side, to)) break;
        this.moveTree(side, from, to);
        break;
      }
    }
  }

  // Direct user actions, for the named cases.
  put(side: Side, path: string, content = this.newContent()): string {
    this.log.push(`put('${side}', ${JSON.stringify(path)}, ${JSON.stringify(content)})`);
    this.created.add(content);
    const it = this.sides[side].get(path);
    if (it) {
      this.userRemoved.add(it.content!);
      it.content = content;
      it.gen++;
    } else this.sides[side].set(path, { kind: 'file', content, ino: this.ino++, gen: 0 });
    return content;
  }
  mkdir(side: Side, path: string): void {
    this.log.push(`mkdir('${side}', ${JSON.stringify(path)})`);
    this.sides[side].set(path, { kind: 'folder', ino: this.ino++, gen: 0 });
  }
  remove(side: Side, path: string): void {
    this.log.push(`remove('${side}', ${JSON.stringify(path)})`);
    for (const q of this.subtree(side, path)) {
      const c = this.sides[side].get(q)!.content;
      if (c) this.userRemoved.add(c);
      this.sides[side].delete(q);
    }
  }
  move(side: Side, from: string, to: string): void {
    this.log.push(`move('${side}', ${JSON.stringify(from)}, ${JSON.stringify(to)})`);
    this.moveTree(side, from, to);
  }
  content(side: Side, path: string): string | undefined {
    return this.sides[side].get(path)?.content;
  }
  paths(side: Side): string[] {
    return [...this.sides[side].keys()].sort();
  }

  private moveTree(side: Side, from: string, to: string) {
    const m = this.sides[side];
    for (const q of this.subtree(side, from).sort()) {
      const it = m.get(q)!;
      m.delete(q);
      m.set(to + q.slice(from.length), it);
    }
  }

  // ---- the engine ----------------------------------------------------------------------------

  private renameSynced(from: string, to: string) {
    if (from === to) return;
    const moved: SyncedEntry[] = [];
    // A file has nothing below it: entries under its path belong to other nodes (a folder that
    // took the name while the file was on its way elsewhere) and stay where they are.
    const file = this.synced.get(from)?.kind === 'file';
    for (const [p, s] of this.synced) if (p === from || (!file && isInside(p, from))) moved.push(s);
    for (const s of moved) this.synced.delete(s.path);
    for (const s of moved) {
      const path = to + s.path.slice(from.length);
      this.synced.set(path, { ...s, path });
    }
  }
  private recordAt(path: string, from?: string, hash?: string) {
    if (from) this.renameSynced(from, path);
    const l = this.at('local', path);
    const r = this.at('remote', path);
    this.synced.set(path, { path, kind: l.kind, localId: l.id, localVer: l.ver, remoteId: r.id, remoteVer: r.ver, hash });
  }
  /** The synced tree is keyed by path: an entry of another node there is not overwritten. */
  private mayRecord(path: string, from?: string) {
    return !this.synced.has(path) || from === path;
  }
  private ver(side: Side, path: string): string | undefined {
    const it = this.sides[side].get(path);
    return it && this.entry(side, path, it).ver;
  }
  private at(side: Side, path: string): SideEntry {
    return this.entry(side, path, this.sides[side].get(path)!);
  }

  /** A new plan, shuffled with `seed`, replaces what was left of the last (a crash dropped it). */
  planPending(seed: number): Plan {
    this.log.push(`planPending(${seed})`);
    const plan = this.plan();
    this.pending = shuffler(seed)(plan.ops);
    return plan;
  }

  /** Applies the next `count` pending operations. */
  applyPending(count: number): void {
    this.log.push(`applyPending(${count})`);
    for (const op of this.pending.splice(0, count)) this.apply(op);
  }

  /** Applies one planned operation as the executor would; false when its expectations fail. */
  apply(op: Op): boolean {
    const done = this.applyInner(op);
    this.afterChange();
    return done;
  }

  private applyInner(op: Op): boolean {
    switch (op.type) {
      case 'record': {
        if (this.ver('local', op.path) !== op.local.ver || this.ver('remote', op.path) !== op.remote.ver) return false;
        this.recordAt(op.path, op.from, op.hash);
        return true;
      }
      case 'forget':
        this.synced.delete(op.path);
        return true;
      case 'mkdir': {
        const other = op.side === 'local' ? 'remote' : 'local';
        if (!this.parentIsFolder(op.side, op.path) || !this.isFree(op.side, op.path)) return false;
        this.sides[op.side].set(op.path, { kind: 'folder', ino: this.ino++, gen: 0 });
        if (this.sides[other].get(op.path)?.kind === 'folder' && this.mayRecord(op.path, op.from)) this.recordAt(op.path, op.from);
        return true;
      }
      case 'copy': {
        const other = op.side === 'local' ? 'remote' : 'local';
        const src = this.sides[other].get(op.src);
        if (!src || src.kind !== 'file' || this.ver(other, op.src) !== op.expectSource) return false;
        if (!this.parentIsFolder(op.side, op.path)) return false;
        const target = this.sides[op.side].get(op.path);
        if (op.expectTarget === undefined ? !this.isFree(op.side, op.path) : !target || this.ver(op.side, op.path) !== op.expectTarget) return false;
        if (target?.content && target.content !== src.content && !this.propagated.has(target.content))
          this.violations.push(`copy ${op.side} ${op.path} overwrote ${target.content}, never synced`);
        this.sides[op.side].set(op.path, { kind: 'file', content: src.content, ino: this.ino++, gen: 0 });
        const s = op.synced ? this.synced.get(op.synced) : undefined;
        const x = this.at(op.side, op.path);
        const y = this.at(other, op.src);
        if (s) {
          const [lx, rx] = op.side === 'local' ? [x, y] : [y, x];
          // Both sides now hold it at one place: the synced entry follows it there.
          const at = op.src === op.path && s.path !== op.path && this.mayRecord(op.path) ? op.path : s.path;
          if (at !== s.path) this.renameSynced(s.path, at);
          this.synced.set(at, { ...s, path: at, localId: lx.id, localVer: lx.ver, remoteId: rx.id, remoteVer: rx.ver });
        } else if (op.src === op.path && this.mayRecord(op.path)) this.recordAt(op.path);
        return true;
      }
      case 'move': {
        const other = op.side === 'local' ? 'remote' : 'local';
        const e = this.sides[op.side].has(op.from) ? this.at(op.side, op.from) : undefined;
        if (!e || e.kind !== op.expect.kind || e.ver !== op.expect.ver || e.id !== op.expect.id) return false;
        // A case-only rename on a case-insensitive side is a rename of the entry itself.
        const caseOnly = this.key(op.side, op.from) === this.key(op.side, op.path);
        if (!this.parentIsFolder(op.side, op.path) || (!caseOnly && !this.isFree(op.side, op.path)) || isInside(op.path, op.from)) return false;
        this.moveTree(op.side, op.from, op.path);
        if (op.synced && this.synced.has(op.synced) && this.sides[other].get(op.path)?.kind === op.expect.kind && this.mayRecord(op.path, op.synced)) {
          this.renameSynced(op.synced, op.path);
          const s = this.synced.get(op.path)!;
          const x = this.at(op.side, op.path);
          this.synced.set(op.path, op.side === 'local' ? { ...s, localId: x.id } : { ...s, remoteId: x.id });
        }
        return true;
      }
      case 'delete': {
        const have = this.subtree(op.side, op.path).map((p) => `${p}|${this.ver(op.side, p)}`).sort();
        const want = op.expect.map((x) => `${x.path}|${x.ver}`).sort();
        if (have.join('\n') !== want.join('\n')) return false;
        for (const p of this.subtree(op.side, op.path)) {
          const c = this.sides[op.side].get(p)!.content;
          if (c) {
            if (!this.propagated.has(c)) this.violations.push(`delete ${op.side} ${p} removed ${c}, never synced`);
            this.trash.push(c);
          }
          this.sides[op.side].delete(p);
        }
        if (op.synced) this.synced.delete(op.synced);
        return true;
      }
      case 'conflict': {
        const l = this.sides.local.get(op.path);
        const r = this.sides.remote.get(op.path);
        if (!l || !r || this.ver('local', op.path) !== op.local.ver || this.ver('remote', op.path) !== op.remote.ver) return false;
        if (l.content === r.content) {
          if (!this.mayRecord(op.path, op.synced)) return false;
          this.recordAt(op.path, op.synced !== op.path ? op.synced : undefined);
          return true;
        }
        if (!this.isFree('local', op.copyPath) || !this.isFree('remote', op.copyPath)) return false;
        this.moveTree('local', op.path, op.copyPath);
        this.conflicts.push(op.copyPath);
        const s = op.synced ? this.synced.get(op.synced) : undefined;
        if (s) this.synced.set(s.path, { ...s, localId: undefined, localVer: undefined });
        return true;
      }
    }
  }

  /**
   * Plans and applies until nothing is left to do (batches shuffled with `seed` when given) and
   * returns the number of rounds. Throws, with the seed and the whole case, when the plan does
   * not converge within `cap` rounds or the trees grow past what the changes can explain (a
   * conflict copy per file at most): a failure to replay beats a run that never ends.
   */
  settle(cap = 200, seed?: number): number {
    this.log.push(seed === undefined ? 'settle()' : `settle(${cap}, ${seed})`);
    const shuffle = seed === undefined ? (o: Op[]) => o : shuffler(seed);
    const size = () => this.sides.local.size + this.sides.remote.size + this.synced.size;
    const bound = 3 * size() + 30;
    let last: Op[] = [];
    for (let round = 0; round < cap; round++) {
      const plan = this.plan();
      if (plan.refused || plan.stuck) this.fail(`planner ${plan.refused ? `refused (${plan.refused.reason})` : 'is stuck'} in round ${round}`, last);
      if (plan.ops.length === 0) return round;
      for (const op of shuffle(plan.ops)) this.apply(op);
      last = plan.ops;
      if (size() > bound) this.fail(`the trees grew to ${size()} entries (bound ${bound}) in round ${round}`, last);
    }
    return this.fail(`no convergence within ${cap} rounds`, last);
  }

  private fail(why: string, last: Op[]): never {
    const ops = last.map((o) => JSON.stringify(o)).join('\n  ');
    throw new Error(`sync did not settle: ${why}\ncase (play again with these calls):\n  ${this.log.join('\n  ')}\nlast batch:\n  ${ops}`);
  }

  /** What is wrong with the end state: the two sides differ, the synced tree disagrees, a version was lost. */
  problems(): string[] {
    const out = [...this.violations];
    const view = (side: Side) =>
      [...this.sides[side]]
        .map(([p, it]) => `${p}:${it.kind}:${it.content ?? ''}`)
        .sort()
        .join('\n');
    if (view('local') !== view('remote')) out.push(`sides differ:\nlocal\n${view('local')}\nremote\n${view('remote')}`);
    const l = this.scan('local');
    const r = this.scan('remote');
    for (const [p, e] of l) {
      const s = this.synced.get(p);
      if (!s || s.kind !== e.kind || (e.kind === 'file' && (s.localVer !== e.ver || s.remoteVer !== r.get(p)?.ver))) out.push(`synced tree disagrees at ${p}`);
    }
    for (const p of this.synced.keys()) if (!l.has(p)) out.push(`synced tree keeps ${p}`);
    const present = new Set<string>(this.trash);
    for (const side of ['local', 'remote'] as const) for (const it of this.sides[side].values()) if (it.content) present.add(it.content);
    for (const c of this.created) if (!this.userRemoved.has(c) && !present.has(c)) out.push(`version ${c} lost`);
    return out;
  }
}
