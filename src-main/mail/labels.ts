/**
 * Labels (spec 2) as IMAP keywords: a label is a keyword some message carries, or one the user
 * created before any message carries it (remembered locally).
 */
import type { MailLabel } from '../contract/mail';
import { ServiceError, invalid, notFound } from '../errors';
import type { MailEngine } from './engine';
import type { MailIds } from './ids';
import type { MailStore } from './store';

/** IMAP keyword = atom (RFC 3501): no controls, spaces, or ( ) { % * " \ ]. */
// oxlint-disable-next-line no-control-regex -- excluding control characters is the point
const KEYWORD = /^[^\x00-\x20\x7f(){%*"\\\]]{1,200}$/;

export function checkLabelName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !KEYWORD.test(name) || name.startsWith('\\') || name.startsWith('$')) {
    throw invalid('A label name is an IMAP keyword: 1 to 200 characters without spaces, controls or ( ) { % * " \\ ], not starting with \\ or $.');
  }
}

export class MailLabels {
  constructor(
    private readonly store: MailStore,
    private readonly ids: MailIds,
    private readonly engine: MailEngine,
  ) {}

  async list(account: number): Promise<MailLabel[]> {
    await this.engine.ready(account);
    return this.store.labels(account).map((name) => ({ id: this.ids.label(account, name), name }));
  }

  async get(account: number, id: string): Promise<MailLabel> {
    const [name] = this.ids.decode(account, id, 'l', 'The label');
    await this.engine.ready(account);
    if (!this.store.labels(account).includes(name!)) throw notFound('The label');
    return { id, name: name! };
  }

  /** A label exists before any message carries it: Tributary remembers it locally. */
  async create(account: number, name: unknown): Promise<MailLabel> {
    checkLabelName(name);
    await this.engine.ready(account);
    if (this.store.labels(account).includes(name)) throw this.taken(account, name);
    this.store.addLabel(account, name);
    return { id: this.ids.label(account, name), name };
  }

  /** Renames a keyword on every message carrying it (spec 2 lists this for service A only). */
  async rename(account: number, id: string, name: unknown): Promise<MailLabel> {
    const old = (await this.get(account, id)).name;
    checkLabelName(name);
    if (name === old) return { id, name };
    if (this.store.labels(account).includes(name)) throw this.taken(account, name);
    await this.retag(account, old, name);
    this.store.addLabel(account, name);
    this.store.dropLabel(account, old);
    return { id: this.ids.label(account, name), name };
  }

  /** Removes the keyword from every message, then forgets the label. */
  async delete(account: number, id: string): Promise<void> {
    const { name } = await this.get(account, id);
    await this.retag(account, name, null);
    this.store.dropLabel(account, name);
  }

  private taken(account: number, name: string): ServiceError {
    return new ServiceError('naming_conflict', `A label named "${name}" already exists.`, { conflictingResourceId: this.ids.label(account, name) });
  }

  private async retag(account: number, from: string, to: string | null): Promise<void> {
    const sync = await this.engine.ready(account);
    const byFolder = new Map<string, number[]>();
    for (const m of this.store.withKeyword(account, from)) byFolder.set(m.folder, [...(byFolder.get(m.folder) ?? []), m.uid]);
    for (const [folder, uids] of byFolder) {
      await sync.write(folder, async (c) => {
        if (to) await c.messageFlagsAdd(uids.join(','), [to], { uid: true });
        await c.messageFlagsRemove(uids.join(','), [from], { uid: true });
      });
    }
  }
}
