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
  const gateway = (model.gateway?.servers ?? []).map((s) => s.host);
  const coveredByGateway = (host: string) =>
    gateway.some((g) => g === host || (g.startsWith('*.') && host.endsWith(g.slice(1))));
  for (const server of model.servers)
    served.set(
      server.host,
      ownReason(server) ?? (coveredByGateway(server.host) ? 'a Gateway listener names it' : 'shared'),
    );
  for (const [host, where] of served) {
    if (where !== 'shared' || host.startsWith('*.') || host === '_') continue;
    const dot = host.indexOf('.');
    const parent = dot > 0 ? served.get(`*${host.slice(dot)}`) : undefined;
    if (parent !== undefined && parent !== 'shared') served.set(host, 'a wildcard host with its own server covers it');
  }
  return served;
}

function ownReason(server: Server): RenderedReason | null {
  if (server.snippet !== null && server.snippet.length > 0) return 'server-snippet';
  if (server.clientAuth !== null) return 'auth-tls';
  if (server.locations.some((l) => l.pass?.canary != null)) return 'canary';
  return null;
}
