/**
 * What changed between two builds' servers, by object: an incremental build hands every server it did not settle
 * again back as the same object, so whatever reads every server each sync (the shared server's table, the request
 * metrics' routes, the served Ingresses) can look at the changed ones only.
 */
import { addedAndRemoved } from './incremental/list-diff.js';
import type { NginxModel, Server } from './nginx-model.js';

/**
 * changedServers is the servers of `after` that `before` does not hold and those of `before` that `after` does not
 * (by identity: a server only moved is in neither). Each host is once in each list given. The build's lists keep their
 * order, so this costs the changed part (src/model/incremental/list-diff.ts), not every server.
 */
export function changedServers(
  before: readonly Server[],
  after: readonly Server[],
): { readonly added: readonly Server[]; readonly removed: readonly Server[] } {
  if (before === after) return { added: [], removed: [] };
  return addedAndRemoved(before, after);
}

/** The servers of a model: the catch-all apart, the named ones in the build's list. */
export type ModelServers = Pick<NginxModel, 'defaultServer' | 'servers'>;

/** changedModelServers is changedServers of two models' servers, the catch-all among them (null: no model before). */
export function changedModelServers(
  before: ModelServers | null,
  after: ModelServers,
): { readonly added: readonly Server[]; readonly removed: readonly Server[] } {
  const { added, removed } = changedServers(before?.servers ?? [], after.servers);
  if (before?.defaultServer === after.defaultServer) return { added, removed };
  return {
    added: after.defaultServer ? [...added, after.defaultServer] : added,
    removed: before?.defaultServer ? [...removed, before.defaultServer] : removed,
  };
}
