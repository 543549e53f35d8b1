/**
 * Where each Ingress host is served from with routes as data (issue 29): the shared server (the default server, whose
 * Lua router reads the pushed table; src/sync/shared-server.ts) or a server block of its own in nginx.conf, and why.
 * Pure: the model in, a map out; the sync, the status page and `render` read it.
 */
import type { NginxModel, Server } from './nginx-model.js';

/** RenderedReason is why a host keeps its own server block. */
export type RenderedReason =
  | 'server-snippet'
  | 'auth-tls'
  | 'canary'
  | 'a Gateway listener names it'
  | 'a wildcard host with its own server covers it'
  | 'a Gateway listener is the default server';

/**
 * renderedHosts says where each host of the model is served from. A host keeps its own server when its owner's
 * server-level settings need one (server-snippet, auth-tls), when it picks a canary (the canary's maps choose its
 * upstream in nginx.conf), or when nginx would otherwise give its name to another server: a Gateway listener's
 * hostname, a wildcard Ingress host that keeps its own server, or a Gateway listener that is the default server of an
 * Ingress port (unknown names are then the Gateway's, so no Ingress host can be served by the shared server).
 */
export function renderedHosts(model: NginxModel): Map<string, 'shared' | RenderedReason> {
  const served = new Map<string, 'shared' | RenderedReason>([[model.defaultServer.host, 'shared']]);
  if (model.gatewayDefault.http || model.gatewayDefault.https) {
    for (const server of model.servers) served.set(server.host, 'a Gateway listener is the default server');
    return served;
  }
  const covered = gatewayCover(model);
  for (const server of model.servers) served.set(server.host, ownReason(server) ?? covered(server.host) ?? 'shared');
  for (const [host, where] of served) {
    if (where !== 'shared') continue;
    const parent = wildcardParent(host);
    const parentWhere = parent === null ? undefined : served.get(parent);
    if (parentWhere !== undefined && parentWhere !== 'shared') served.set(host, WILDCARD_COVERS);
  }
  return served;
}

/** WILDCARD_COVERS is why a host whose wildcard parent keeps its own server keeps one too (nginx picks the wildcard's). */
export const WILDCARD_COVERS: RenderedReason = 'a wildcard host with its own server covers it';

/** gatewayCover says, of a host, whether a Gateway listener's hostname names it (exactly or as its wildcard). */
export function gatewayCover(model: NginxModel): (host: string) => RenderedReason | null {
  const gateway = (model.gateway?.servers ?? []).map((s) => s.host);
  if (gateway.length === 0) return () => null;
  return (host) =>
    gateway.some((g) => g === host || (g.startsWith('*.') && host.endsWith(g.slice(1))))
      ? 'a Gateway listener names it'
      : null;
}

/**
 * wildcardParent is the one-label wildcard host that would take `host`'s name from the shared server (`*.b.c` for
 * `a.b.c`), or null for a wildcard, the catch-all or a name without a dot.
 */
export function wildcardParent(host: string): string | null {
  if (host.startsWith('*.') || host === '_') return null;
  const dot = host.indexOf('.');
  return dot > 0 ? `*${host.slice(dot)}` : null;
}

/** ownReason is why a server needs a block of its own whatever other servers there are, or null. */
export function ownReason(server: Server): RenderedReason | null {
  if (server.snippet !== null && server.snippet.length > 0) return 'server-snippet';
  if (server.clientAuth !== null) return 'auth-tls';
  if (server.locations.some((l) => l.pass?.canary != null)) return 'canary';
  return null;
}
