/**
 * The sync planner: a pure function of the three trees (local, remote, synced) to the next batch
 * of operations. It is called again after every batch (or after a crash) on fresh scans, so it
 * keeps no state of its own, and each batch holds only operations that can run now, on disjoint
 * paths, in any order, but for what goes into a new folder the batch makes: that runs once the
 * folder's mkdir is done (the executor waits for it), so a new tree goes in one batch.
 *
 * 1. Each side is mapped onto the synced tree: a synced entry is found again by identity (inode,
 *    upstream id, unique ETag) wherever it went, else at its own place; remote folders, which
 *    have no identity, follow their files (a folder whose files all reappeared below one new
 *    folder was moved there). What is left over on a side was added there.
 * 2. Every node (synced, or added on one or both sides) gets a target place: where the side that
 *    moved it put it (local when both did), and crossed moves that would make a cycle give up one
 *    of the moves. A node deleted on one side survives when the other side changed it (edit wins
 *    over delete), and a surviving node keeps its folders alive.
 * 3. Names that clash in a folder (same name, or equal after Unicode NFC and, towards a case-
 *    insensitive side, case folding) keep both: the newer arrival is renamed
 *    `name (conflict YYYY-MM-DD HHMMSS).ext`.
 * 4. Operations bring each side to the targets: moves, folders, copies of changed content,
 *    conflicts (changed on both sides: equal content is no conflict), deletes of what one side
 *    deleted and the other left alone. Deletes never run on a suspicious scan (a missing root,
 *    one side empty) and wait for the user above a share or count.
 */
import { baseName, isInside, joinPath, nameWithSuffix, parentOf, ROOT } from '../connectors/shared/paths';
import { otherSide, type Op, type Plan, type PlanOptions, type Side, type SideEntry, type SyncedEntry, type SyncedTree, type Tree } from './model';

type Choice = { parent: Node | null; name: string };

interface Node {
  key: string;
  kind: 'file' | 'folder';
  synced?: SyncedEntry;
  local?: SideEntry;
  remote?: SideEntry;
  /** Candidate (parent, name) pairs, the first one in use; cycles drop the first. */
  choices: Choice[];
  alive: boolean;
  path?: string;
}

const sideOf = (n: Node, s: Side) => (s === 'local' ? n.local : n.remote);

const depth = (p: string) => {
  let d = 0;
  for (let i = 0; i < p.length; i++) if (p.charCodeAt(i) === 47) d++;
  return p === ROOT ? 0 : d;
};
const byDepth = (a: string, b: string) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0);

/** `name (conflict 2026-11-24 031500).ext`, in UTC; a long name's stem is shortened to fit a file name. */
export function conflictName(name: string, now: Date, n = 1): string {
  const pad = (x: number) => String(x).padStart(2, '0');
  const stamp = `${now.getUTCFullYear()}-${pad(now.getUTCMonth() + 1)}-${pad(now.getUTCDate())} ${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
  return nameWithSuffix(name, ` (conflict ${stamp}${n > 1 ? ` ${n}` : ''})`);
}

/**
 * Finds every synced entry again on one side: its current path, or null when it is gone.
 * `other`: where the other side holds each synced entry, for folders without identity.
 */
export function mapSide(synced: SyncedTree, tree: Tree, side: Side, other?: Map<string, string | null>): Map<string, string | null> {
  const idOf = (s: SyncedEntry) => (side === 'local' ? s.localId : s.remoteId);
  const byId = new Map<string, string | null>();
  for (const e of tree.values()) if (e.id) byId.set(e.id, byId.has(e.id) ? null : e.path);
  const syncedIds = new Map<string, number>();
  for (const s of synced.values()) {
    const id = idOf(s);
    if (id) syncedIds.set(id, (syncedIds.get(id) ?? 0) + 1);
  }
  const cur = new Map<string, string | null>();
  const claimed = new Set<string>();
  const order = [...synced.keys()].sort(byDepth);

  // By identity, wherever it went, but never onto another synced entry's place (swaps read as edits).
  for (const path of order) {
    const s = synced.get(path)!;
    const id = idOf(s);
    if (!id || syncedIds.get(id) !== 1) continue;
    const p = byId.get(id);
    if (p && !claimed.has(p) && tree.get(p)!.kind === s.kind && (p === path || !synced.has(p))) {
      cur.set(path, p);
      claimed.add(p);
    }
  }
  const byPlace = () => {
    for (const path of order) {
      if (cur.get(path)) continue;
      const s = synced.get(path)!;
      const parent = parentOf(path);
      // Only a synced folder leads its children: an entry below a synced file (its name was taken
      // by a folder while the file moved on) is looked for at its own place.
      const lead = synced.get(parent)?.kind === 'folder' ? cur.get(parent) : undefined;
      const at = parent === ROOT ? path : joinPath(lead ?? parent, baseName(path));
      const fits = (q: string) => {
        const e = tree.get(q);
        return !!e && !claimed.has(q) && e.kind === s.kind && (q === path || !synced.has(q));
      };
      // Where the planner parked it (see parkOne) it is still the same node, looked for there
      // first: an emptied remote folder has nothing else to be found by, and a folder made since
      // under the old name (not recorded while this entry holds the path) must not take its place.
      let base: string | undefined;
      for (let i = 1, q = `${at}${PARK}`; !base && tree.has(q); q = `${at}${PARK}${++i}`) if (fits(q)) base = q;
      if (!base && fits(at)) base = at;
      // Below a parked folder, an entry not found there may have been recorded (by path) for the
      // folder that took the name since: it is looked for at its own place.
      if (!base && lead && lead !== parent && PARKED.test(baseName(lead)) && fits(path)) base = path;
      if (base) {
        cur.set(path, base);
        claimed.add(base);
      } else cur.set(path, null);
    }
  };
  byPlace();

  // Folders without identity follow their contents.
  let inferred = false;
  for (const path of order) {
    const s = synced.get(path)!;
    if (s.kind !== 'folder' || cur.get(path)) continue;
    const votes = new Map<string, number>();
    for (const [d, p] of cur) {
      if (!p || !isInside(d, path)) continue;
      const rel = d.slice(path.length);
      if (!p.endsWith(rel)) continue;
      const cand = p.slice(0, p.length - rel.length);
      // A synced entry at the candidate place that went elsewhere leaves it free to take.
      const vacated = !synced.has(cand) || (cur.get(cand) ?? null) !== cand;
      if (cand && tree.get(cand)?.kind === 'folder' && !claimed.has(cand) && vacated) votes.set(cand, (votes.get(cand) ?? 0) + 1);
    }
    let best: string | undefined;
    for (const [c, v] of votes) if (!best || v > votes.get(best)!) best = c;
    // No contents to follow (an empty folder, or only folders): where the other side moved it,
    // when this side holds a free folder there. It is how a move made on this side by an earlier
    // batch is seen again, when the synced tree could not record it yet (another node's entry
    // held the name).
    const there = other?.get(path);
    if (!best && there && there !== path && tree.get(there)?.kind === 'folder' && !claimed.has(there) && !(synced.has(there) && cur.get(there) === there)) best = there;
    if (best) {
      cur.set(path, best);
      claimed.add(best);
      inferred = true;
    }
  }
  if (inferred) byPlace();
  return cur;
}

export function planSync(local: Tree, remote: Tree, synced: SyncedTree, options: PlanOptions): Plan {
  const roots = options.rootsPresent ?? { local: true, remote: true };
  for (const side of ['local', 'remote'] as const) if (!roots[side]) return { ops: [], refused: { reason: 'root-missing', side } };
  if (!options.allowEmptySide && synced.size > 0) {
    if (local.size === 0 && remote.size > 0) return { ops: [], refused: { reason: 'empty-side', side: 'local' } };
    if (remote.size === 0 && local.size > 0) return { ops: [], refused: { reason: 'empty-side', side: 'remote' } };
  }
  const trees = { local, remote };
  const foldCase = !!(options.remoteCaseInsensitive || options.localCaseInsensitive);
  const nameKey = (name: string) => (foldCase ? name.normalize('NFC').toLowerCase() : name.normalize('NFC'));
  const ciSide = { local: !!options.localCaseInsensitive, remote: !!options.remoteCaseInsensitive };
  const pathKey = (side: Side, p: string) => (ciSide[side] ? p.toLowerCase() : p);

  // ---- 1. nodes ----------------------------------------------------------------------------
  const localCur = mapSide(synced, local, 'local');
  const cur = { local: localCur, remote: mapSide(synced, remote, 'remote', localCur) };
  const owner = { local: new Map<string, Node>(), remote: new Map<string, Node>() };
  const nodes: Node[] = [];
  const syncedNode = new Map<string, Node>();
  for (const s of synced.values()) {
    const n: Node = { key: `s:${s.path}`, kind: s.kind, synced: s, choices: [], alive: false };
    for (const side of ['local', 'remote'] as const) {
      const p = cur[side].get(s.path);
      if (p) {
        n[side] = trees[side].get(p)!;
        owner[side].set(p, n);
      }
    }
    nodes.push(n);
    syncedNode.set(s.path, n);
  }
  for (const side of ['local', 'remote'] as const) {
    for (const e of trees[side].values()) {
      if (owner[side].has(e.path)) continue;
      const twin = side === 'remote' ? owner.local.get(e.path) : undefined;
      if (twin && !twin.synced && !twin.remote && twin.kind === e.kind) {
        twin.remote = e;
        twin.key = `b:${e.path}`;
        owner.remote.set(e.path, twin);
        continue;
      }
      const n: Node = { key: `${side[0]}:${e.path}`, kind: e.kind, [side]: e, choices: [], alive: true };
      owner[side].set(e.path, n);
      nodes.push(n);
    }
  }

  const modified = (n: Node, side: Side): boolean => {
    const e = sideOf(n, side);
    if (!e) return false;
    if (!n.synced) return true;
    if (n.kind === 'folder') return false;
    return e.ver !== (side === 'local' ? n.synced.localVer : n.synced.remoteVer);
  };
  const placeOn = (n: Node, side: Side): Choice | undefined => {
    const e = sideOf(n, side);
    if (!e) return undefined;
    const pp = parentOf(e.path);
    return { parent: pp === ROOT ? null : (owner[side].get(pp) ?? null), name: unpark(baseName(e.path)) };
  };
  const syncedPlace = (n: Node): Choice | undefined => {
    if (!n.synced) return undefined;
    const pp = parentOf(n.synced.path);
    if (pp !== ROOT && syncedNode.get(pp)?.kind !== 'folder') return undefined;
    return { parent: pp === ROOT ? null : syncedNode.get(pp)!, name: baseName(n.synced.path) };
  };
  const same = (a: Choice | undefined, b: Choice | undefined) => !!a && !!b && a.parent === b.parent && a.name === b.name;

  // ---- 2. survival and target places -------------------------------------------------------
  for (const n of nodes) {
    const l = placeOn(n, 'local');
    const r = placeOn(n, 'remote');
    const s = syncedPlace(n);
    if (n.synced) {
      const lMoved = !!l && (s ? !same(l, s) : n.local!.path !== n.synced.path);
      const rMoved = !!r && (s ? !same(r, s) : n.remote!.path !== n.synced.path);
      if (l && r) n.alive = true;
      else if (l) n.alive = lMoved || modified(n, 'local');
      else if (r) n.alive = rMoved || modified(n, 'remote');
      const first = l && r ? (lMoved ? l : rMoved ? r : (s ?? l)) : (l ?? r ?? s);
      n.choices = [first, l, r, s].filter((c, i, all): c is Choice => !!c && all.findIndex((d) => same(c, d)) === i);
      if (n.choices.length === 0) n.choices = [{ parent: null, name: baseName(n.synced.path) }];
    } else {
      n.choices = [(l ?? r)!];
    }
  }
  breakCycles(nodes);
  for (const n of nodes) {
    if (!n.alive) continue;
    for (let p = n.choices[0].parent; p && !p.alive; p = p.choices[0].parent) p.alive = true;
  }

  // ---- 3. target paths, clashes keep both ----------------------------------------------------
  const children = new Map<Node | null, Node[]>();
  for (const n of nodes) {
    if (!n.alive) continue;
    const p = n.choices[0].parent;
    if (!children.has(p)) children.set(p, []);
    children.get(p)!.push(n);
  }
  const rank = (n: Node) => (n.synced ? (n.local && n.remote ? 0 : 1) : n.remote ? 2 : 3);
  const queue: (Node | null)[] = [null];
  while (queue.length) {
    const parent = queue.shift()!;
    const base = parent ? parent.path! : ROOT;
    const kids = (children.get(parent) ?? []).sort((a, b) => rank(a) - rank(b) || (a.choices[0].name < b.choices[0].name ? -1 : 1));
    const used = new Set<string>();
    for (const k of kids) {
      let name = k.choices[0].name;
      for (let i = 1; used.has(nameKey(name)); i++) name = conflictName(k.choices[0].name, options.now, i);
      used.add(nameKey(name));
      k.path = joinPath(base, name);
      if (k.kind === 'folder') queue.push(k);
    }
  }

  // ---- 4. operations -----------------------------------------------------------------------
  const folded = { local: foldIndex(local, ciSide.local), remote: foldIndex(remote, ciSide.remote) };
  const batch = new Batch(pathKey);
  // `under`: the new folder this operation's target goes into, made by a mkdir of the same batch.
  const candidates: { order: number; depth: number; op: Op; under?: string }[] = [];
  const add = (order: number, at: string, op: Op, under?: string) => candidates.push({ order, depth: depth(at), op, under });

  const parentReady = (side: Side, n: Node, t: string) => {
    const pp = parentOf(t);
    if (pp === ROOT) return true;
    const p = owner[side].get(pp);
    return !!p && p === n.choices[0].parent;
  };
  const free = (side: Side, t: string, n: Node) => {
    const at = folded[side].get(pathKey(side, t));
    return !at || owner[side].get(at) === n;
  };
  // A new folder (no synced entry) that one side lacks is made there; what is new inside it goes
  // into it in the same batch, after it (the executor waits for its mkdir), not a round later.
  const makes = new Map<string, boolean>();
  const willMake = (side: Side, n: Node): boolean => {
    const key = `${side}:${n.key}`;
    let answer = makes.get(key);
    if (answer === undefined) {
      makes.set(key, false); // a cycle of parents (never expected) makes nothing
      const other = sideOf(n, otherSide(side));
      answer = n.alive && !n.synced && n.kind === 'folder' && !sideOf(n, side) && !!other && other.path === n.path && (parentReady(side, n, n.path!) || newParent(side, n)) && free(side, n.path!, n);
      makes.set(key, answer);
    }
    return answer;
  };
  /** The parent `n` goes into on `side` is a new folder made by the same batch (and `n` is new too). */
  const newParent = (side: Side, n: Node): boolean => {
    const p = n.choices[0].parent;
    return !n.synced && !!p && parentOf(n.path!) === p.path && willMake(side, p);
  };
  const freeName = (t: string, n: Node) => {
    const [dir, name] = [parentOf(t), baseName(t)];
    for (let i = 1; ; i++) {
      const c = joinPath(dir, conflictName(name, options.now, i));
      if (!folded.local.has(pathKey('local', c)) && !folded.remote.has(pathKey('remote', c)) && !nodes.some((m) => m !== n && m.alive && m.path === c)) return c;
    }
  };

  let deleteFiles = 0;
  let syncedFiles = 0;
  for (const n of nodes) {
    if (n.synced?.kind === 'file') syncedFiles++;
    if (!n.alive) {
      const present = (['local', 'remote'] as const).find((s) => sideOf(n, s));
      if (!present) {
        add(6, n.synced!.path, { type: 'forget', path: n.synced!.path });
        continue;
      }
      if (n.kind === 'file') deleteFiles++;
      const e = sideOf(n, present)!;
      const expect: { path: string; ver: string }[] = [];
      let ok = true;
      for (const x of subtree(trees[present], e.path)) {
        const o = owner[present].get(x.path);
        if (!o || o.alive) ok = false;
        expect.push({ path: x.path, ver: x.ver });
      }
      if (ok) add(0, e.path, { type: 'delete', side: present, path: e.path, expect, synced: n.synced!.path });
      continue;
    }
    const t = n.path!;
    for (const side of ['local', 'remote'] as const) {
      const e = sideOf(n, side);
      const other = sideOf(n, otherSide(side));
      if (!e) {
        const under = parentReady(side, n, t) ? undefined : newParent(side, n) ? parentOf(t) : null;
        if (under === null || !free(side, t, n)) continue;
        // Without a synced entry the two sides are paired by place only: a copy elsewhere would be
        // a stranger next time (it clashes, is renamed and copied again), so the other side moves first.
        if (!n.synced && other && other.path !== t) continue;
        // A file copied onto the place of another node's synced file, which this side no longer
        // holds, would be taken for that node next time (found by place): that entry moves on first.
        const was = syncedNode.get(t);
        if (!n.synced && n.kind === 'file' && was && was !== n && was.kind === 'file' && !sideOf(was, side)) continue;
        if (n.kind === 'folder') add(2, t, { type: 'mkdir', side, path: t, from: n.synced?.path }, under);
        else if (other) add(3, t, { type: 'copy', side, path: t, src: other.path, expectSource: other.ver, synced: n.synced?.path }, under);
      } else if (e.path !== t) {
        // Remote entries may lack identity: move them only onto a place the local side already holds.
        if (side === 'remote' && n.synced && n.local && n.local.path !== t) continue;
        if (!parentReady(side, n, t) || !free(side, t, n) || isInside(t, e.path)) continue;
        add(1, t, { type: 'move', side, from: e.path, path: t, expect: { kind: e.kind, id: e.id, ver: e.ver }, synced: n.synced?.path });
      }
    }
    if (!n.local || !n.remote) continue;
    const together = n.local.path === t && n.remote.path === t;
    if (n.kind === 'file') {
      const lMod = modified(n, 'local');
      const rMod = modified(n, 'remote');
      if (lMod && rMod) {
        if (!together) continue;
        // The synced tree is keyed by path: another node's entry there must move on first.
        const taken = syncedNode.get(t);
        if (taken && taken !== n) continue;
        const equal = !!n.local.hash && n.local.hash === n.remote.hash;
        if (equal) add(5, t, { type: 'record', path: t, from: n.synced?.path, kind: 'file', local: n.local, remote: n.remote, hash: n.local.hash });
        else add(4, t, { type: 'conflict', path: t, copyPath: freeName(t, n), local: n.local, remote: n.remote, synced: n.synced?.path });
        continue;
      }
      if (lMod) {
        add(3, t, { type: 'copy', side: 'remote', path: n.remote.path, src: n.local.path, expectSource: n.local.ver, expectTarget: n.remote.ver, synced: n.synced?.path });
        continue;
      }
      if (rMod) {
        add(3, t, { type: 'copy', side: 'local', path: n.local.path, src: n.remote.path, expectSource: n.remote.ver, expectTarget: n.local.ver, synced: n.synced?.path });
        continue;
      }
    }
    const s = n.synced;
    // The synced tree is keyed by path: another node's entry there must move on first.
    const held = syncedNode.get(t);
    if (held && held !== n) continue;
    const stale = !s || s.path !== t || (n.kind === 'file' && (s.localVer !== n.local.ver || s.remoteVer !== n.remote.ver)) || s.localId !== n.local.id;
    if (together && stale) add(5, t, { type: 'record', path: t, from: s && s.path !== t ? s.path : undefined, kind: n.kind, local: n.local, remote: n.remote, hash: s?.hash });
  }

  const held = !options.allowDeletes && tooManyDeletes(deleteFiles, syncedFiles, options);
  candidates.sort((a, b) => a.order - b.order || a.depth - b.depth);
  for (const c of candidates) {
    if (held && c.op.type === 'delete') continue;
    batch.offer(c.op, c.under);
  }
  const plan: Plan = { ops: batch.ops };
  if (held) plan.heldDeletes = { count: deleteFiles, total: syncedFiles };
  if (batch.ops.length === 0 && candidates.length === 0 && !converged(nodes)) {
    // Each side waits for the other's place (a file that must move into a folder taking its own
    // name): one of them steps aside under a parked name, which keeps its target.
    const park = parkOne(nodes, trees, owner, folded, pathKey);
    if (park) plan.ops.push(park);
    else plan.stuck = true;
  }
  return plan;
}

/** Suffix of a name parked to break a deadlock of places; the planner reads the name without it. */
export const PARK = '.tributary-park';
const PARKED = /^(.+)\.tributary-park\d*$/;
const unpark = (name: string) => PARKED.exec(name)?.[1] ?? name;

function parkOne(
  nodes: Node[],
  trees: Record<Side, Tree>,
  owner: Record<Side, Map<string, Node>>,
  folded: Record<Side, Map<string, string>>,
  pathKey: (side: Side, p: string) => string,
): Op | undefined {
  for (const side of ['local', 'remote'] as const) {
    for (const m of nodes) {
      if (!m.alive || sideOf(m, side)?.path === m.path) continue;
      const at = folded[side].get(pathKey(side, m.path!));
      const o = at ? owner[side].get(at) : undefined;
      if (!o || o === m || at === o.path) continue;
      const parked = (p: string) => {
        let to = `${p}${PARK}`;
        for (let i = 2; folded[side].has(pathKey(side, to)); i++) to = `${p}${PARK}${i}`;
        return to;
      };
      if (!o.alive) {
        // A deleted folder holding the name (folded) waits for what lives inside it to leave, and
        // that waits for the name: it steps out, next to its target, under a parked name.
        const e = sideOf(m, side);
        const pp = parentOf(m.path!);
        if (e && isInside(e.path, at!)) {
          if (pp !== ROOT && owner[side].get(pp) !== m.choices[0].parent) continue;
          return { type: 'move', side, from: e.path, path: parked(m.path!), expect: { kind: e.kind, id: e.id, ver: e.ver }, synced: m.synced?.path };
        }
        // Else what lives inside it may wait for `m` itself (its new parent): the deleted folder
        // steps aside below, freeing the name, and is deleted from there once emptied.
      }
      const e = trees[side].get(at!)!;
      return { type: 'move', side, from: at!, path: parked(at!), expect: { kind: e.kind, id: e.id, ver: e.ver }, synced: o.synced?.path };
    }
  }
  return undefined;
}

function tooManyDeletes(count: number, total: number, o: PlanOptions): boolean {
  const maxCount = o.maxDeleteCount ?? 1000;
  const share = o.maxDeleteShare ?? 0.5;
  const floor = o.minDeleteCountForShare ?? 10;
  return count > maxCount || (count >= floor && count > share * total);
}

function converged(nodes: Node[]): boolean {
  return nodes.every((n) => !n.alive || (n.local && n.remote && n.local.path === n.path && n.remote.path === n.path));
}

/** Gives up the first choice of one node of each cycle of target parents until none is left. */
function breakCycles(nodes: Node[]): void {
  for (let round = 0; round < nodes.length + 1; round++) {
    const state = new Map<Node, 1 | 2>();
    let broke = false;
    for (const start of nodes) {
      if (state.has(start)) continue;
      const path: Node[] = [];
      let n: Node | null = start;
      while (n && !state.has(n)) {
        state.set(n, 1);
        path.push(n);
        n = n.choices[0].parent;
      }
      if (n && state.get(n) === 1) {
        const cycle = path.slice(path.indexOf(n));
        const victim = cycle.find((c) => c.choices.length > 1);
        if (victim) victim.choices.shift();
        else for (const c of cycle) c.choices = [{ parent: null, name: c.choices[0].name }];
        broke = true;
      }
      for (const p of path) state.set(p, 2);
    }
    if (!broke) return;
  }
}

function foldIndex(tree: Tree, ci: boolean): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of tree.keys()) m.set(ci ? p.toLowerCase() : p, p);
  return m;
}

function* subtree(tree: Tree, path: string): Generator<SideEntry> {
  const top = tree.get(path);
  if (!top) return;
  yield top;
  if (top.kind !== 'folder') return;
  for (const e of tree.values()) if (isInside(e.path, path)) yield e;
}

/**
 * Collects operations whose paths (per side, and in the synced tree) do not overlap, but for new
 * entries into new folders that the batch makes (`under`): those run after their folder's mkdir.
 */
class Batch {
  readonly ops: Op[] = [];
  private readonly touched = { local: new Set<string>(), remote: new Set<string>(), synced: new Set<string>() };
  private readonly above = { local: new Set<string>(), remote: new Set<string>(), synced: new Set<string>() };
  /** Per side, the new folders (no synced entry) this batch makes: their paths, and their paths in the synced tree. */
  private readonly making = { local: new Set<string>(), remote: new Set<string>(), synced: new Set<string>() };

  constructor(private readonly key: (side: Side, p: string) => string) {}

  offer(op: Op, under?: string): boolean {
    let inside: ((s: 'local' | 'remote' | 'synced', a: string) => boolean) | undefined;
    if (under !== undefined) {
      // Only a new entry (mkdir or copy of a node never synced) goes into a folder being made.
      if (!((op.type === 'mkdir' && !op.from) || (op.type === 'copy' && !op.synced && op.expectTarget === undefined))) return false;
      if (!this.making[op.side].has(this.key(op.side, under))) return false;
      inside = (s, a) => this.making[s].has(a) && (s === 'synced' || s === op.side);
    }
    const want: ['local' | 'remote' | 'synced', string][] = [];
    const onSide = (s: Side, p: string) => want.push([s, this.key(s, p)]);
    const onSynced = (p: string | undefined) => p && want.push(['synced', p]);
    switch (op.type) {
      case 'record':
        onSynced(op.path);
        onSynced(op.from);
        onSide('local', op.path);
        onSide('remote', op.path);
        break;
      case 'forget':
        onSynced(op.path);
        break;
      case 'mkdir':
        onSide(op.side, op.path);
        onSynced(op.path);
        onSynced(op.from);
        break;
      case 'copy':
        onSide(op.side, op.path);
        onSide(otherSide(op.side), op.src);
        onSynced(op.synced);
        onSynced(op.path);
        break;
      case 'move':
        onSide(op.side, op.from);
        onSide(op.side, op.path);
        onSynced(op.synced);
        onSynced(op.path);
        break;
      case 'delete':
        onSide(op.side, op.path);
        onSynced(op.synced);
        break;
      case 'conflict':
        onSide('local', op.path);
        onSide('local', op.copyPath);
        onSide('remote', op.path);
        onSide('remote', op.copyPath);
        onSynced(op.synced);
        onSynced(op.path);
        break;
    }
    for (const [s, p] of want) if (this.overlaps(s, p, inside)) return false;
    for (const [s, p] of want) {
      this.touched[s].add(p);
      for (let a = p; a !== ROOT; ) {
        a = parentOf(a);
        this.above[s].add(a);
      }
    }
    if (op.type === 'mkdir' && !op.from) {
      this.making[op.side].add(this.key(op.side, op.path));
      this.making.synced.add(op.path);
    }
    this.ops.push(op);
    return true;
  }

  /** `inside`: touched folders above `p` that it may go into (new folders the batch makes). */
  private overlaps(s: 'local' | 'remote' | 'synced', p: string, inside?: (s: 'local' | 'remote' | 'synced', a: string) => boolean): boolean {
    if (this.touched[s].has(p) || this.above[s].has(p)) return true;
    for (let a = p; a !== ROOT; ) {
      a = parentOf(a);
      if (this.touched[s].has(a) && !inside?.(s, a)) return true;
    }
    return false;
  }
}
