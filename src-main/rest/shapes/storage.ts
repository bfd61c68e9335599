/**
 * The three versions as pure mappings from service objects to wire objects (spec 3, Versioning):
 * v0 `raw`/`raw_id`, `total/count/page/objects` wrappers; v1 `raw.object`, uniform
 * `page`/`next_page` paging, `type` + `api` on every object; v2 `raw.id` instead of `raw_id`,
 * `enabled`/`disable_reason` instead of `active`/`deactivation_code`.
 */
import type { Account, Resource } from '../../contract';
import type { AccountKey } from '../../services/api-keys';
import type { Link } from '../../services/links';
import type { JsonText } from '../json-text';
import type { Version } from './version';

type Json = Record<string, unknown>;

export function account(v: Version, a: Account, extra: Json = {}): Json {
  const base: Json = {
    id: a.id,
    account: a.account,
    service: a.service,
    service_name: a.serviceName,
  };
  if (v === 'v2') {
    base.enabled = a.active;
    base.disable_reason = a.disableReason;
  } else {
    base.active = a.active;
    if (v === 'v1') base.deactivation_code = a.disableReason;
  }
  Object.assign(base, { admin: a.admin, created: a.created, modified: a.modified, user_id: a.userId }, extra);
  if (v !== 'v0') Object.assign(base, { type: 'account', api: 'meta' });
  return base;
}

export function resource(v: Version, r: Resource): Json {
  const o: Json = {
    id: r.id,
    name: r.name,
    size: r.size,
    created: r.created,
    modified: r.modified,
    type: r.kind,
    account: r.account,
    parent: r.parent,
    ancestors: r.ancestors,
    path: r.path,
  };
  if (r.kind === 'file') {
    o.mime_type = r.mimeType;
    o.downloadable = r.downloadable;
  } else {
    o.can_create_folders = r.canCreateFolders;
    o.can_upload_files = r.canUploadFiles;
    o.can_list_recursively = r.canListRecursively;
  }
  if (v === 'v0') {
    o.raw_id = r.rawId;
    o.raw = r.raw;
  } else if (v === 'v1') {
    o.raw_id = r.rawId;
    o.raw = { object: r.raw };
  } else {
    o.raw = { id: r.rawId, object: r.raw };
  }
  if (v !== 'v0') o.api = 'storage';
  return o;
}

export function link(v: Version, l: Link, url: string): Json {
  const o: Json = {
    id: l.id,
    url,
    file_id: l.fileId,
    account: l.account,
    active: l.active,
    direct: l.direct,
    expiration: l.expiration,
    password: l.hasPassword,
    created: l.created,
    modified: l.modified,
  };
  if (v !== 'v0') Object.assign(o, { type: 'link', api: 'storage' });
  return o;
}

export function accountKey(k: AccountKey): Json {
  return { id: k.id, key: k.key, active: k.active, account: k.account, expiration: k.expiration, created: k.created, modified: k.modified };
}

/**
 * A page of objects. v0: `{total, count, page, objects}` (member renamed for recent files,
 * `has_next` for folder contents); v1/v2: `{objects, total, count, page, next_page, type, api}`
 * with `page`/`next_page` as strings (spec 3: "request `page` (string; `1` for the first page)").
 * `total` is there because every list Tributary pages knows it, and clients show it.
 */
export function page(
  v: Version,
  p: { objects: Json[] | { json: JsonText; count: number }; total: number; page: number; hasNext: boolean },
  options: { member?: string; api?: 'meta' | 'storage'; hasNextMember?: boolean } = {},
): Json {
  // Objects may come serialised already (a listing page made once while its folder is unchanged).
  const [objects, count] = Array.isArray(p.objects) ? [p.objects, p.objects.length] : [p.objects.json, p.objects.count];
  if (v === 'v0') {
    const o: Json = { total: p.total, count, page: p.page, [options.member ?? 'objects']: objects };
    if (options.hasNextMember) o.has_next = p.hasNext;
    return o;
  }
  return {
    objects,
    total: p.total,
    count,
    page: String(p.page),
    next_page: p.hasNext ? String(p.page + 1) : null,
    type: 'object_list',
    api: options.api ?? 'storage',
  };
}
