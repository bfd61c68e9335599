/**
 * Files served as storage files without a connector behind them, and their Resource shape.
 * Kept apart from storage.ts so providers (mail files, the ephemeral area) import nothing back.
 */
import type { Readable } from 'node:stream';
import { lookup as mimeLookup } from 'mime-types';
import type { Resource } from '../contract';

/**
 * Files that live outside any storage connector but are served as storage files (spec 2:
 * message attachments and the raw message; spec 1: the `ephemeral` area). A provider owns the
 * decoded ids it recognises; such ids never start with '/', so they cannot collide with paths.
 */
export interface FileProvider {
  owns(upstreamId: string): boolean;
  get(accountId: number, id: string): Promise<Resource>;
  open(accountId: number, id: string, range?: { start?: number; end?: number }): Promise<{ resource: Resource; stream: Readable }>;
  delete?(accountId: number, id: string): Promise<void>;
  /** A reserved folder id (`ephemeral`) whose uploads this provider keeps. */
  area?: string;
  upload?(accountId: number, name: string, body: Readable): Promise<Resource>;
}

/** A file outside any folder tree (attachments, ephemeral uploads), as a storage Resource. */
export function standaloneFile(f: { id: string; account: number; name: string; size: number | null; mimeType?: string | null; created?: string | null; parent: { id: string; name: string } | null; rawId: string }): Resource {
  return {
    id: f.id,
    name: f.name,
    kind: 'file',
    account: f.account,
    size: f.size,
    created: f.created ?? null,
    modified: f.created ?? null,
    parent: f.parent,
    ancestors: null,
    path: null,
    mimeType: f.mimeType || mimeLookup(f.name) || 'application/octet-stream',
    downloadable: true,
    canCreateFolders: false,
    canUploadFiles: false,
    canListRecursively: false,
    rawId: f.rawId,
    raw: {},
  };
}
