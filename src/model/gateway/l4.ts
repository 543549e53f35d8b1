/**
 * The stream kinds' side of the core: what a programmed TLS, TCP or UDP listener serves. Routes were read, judged and
 * attached by the same code as HTTPRoute's (build.ts); here each listener keeps, per SNI hostname (TLS) or for its
 * whole port (TCP, UDP), the oldest attached route (then by namespace/name): a stream has no match to share a name or
 * a port between routes, and a newer route never takes what an older one serves. The others stay Accepted and count
 * in attachedRoutes, as the spec's TCPRoute tests expect. Pure.
 */
import { compareHostnames } from './hostnames.js';
import type { ListenerState } from './listeners.js';
import { byAge } from './precedence.js';
import type { EffectiveBackend, RouteStatus, StreamListenerRoutes, StreamRoute } from './routes.js';
import type { Gateway, HTTPRoute, L4RouteKind, RouteKind } from './types.js';

/** isL4Kind says whether a route kind is served by the stream module. */
export const isL4Kind = (kind: RouteKind): kind is L4RouteKind =>
  kind === 'TLSRoute' || kind === 'TCPRoute' || kind === 'UDPRoute';

/** StreamRouteStatus is the stream kinds' route status, by kind. */
export type StreamRouteStatus = Record<L4RouteKind, RouteStatus[]>;

/** StreamAttachment is a stream route attached to one listener (build.ts's Attachment, as this module reads it). */
export interface StreamAttachment {
  readonly route: HTTPRoute;
  readonly s: ListenerState;
  /** the effective hostnames (null: any; TCP and UDP: null) */
  readonly hosts: readonly (string | null)[];
  readonly backends: readonly (readonly EffectiveBackend[])[];
}

/** streamListenerRoutes is a programmed stream listener's routes: per hostname the oldest attached route. */
export function streamListenerRoutes(
  gateway: Gateway,
  s: ListenerState,
  attachments: readonly StreamAttachment[],
  address: string | undefined,
): StreamListenerRoutes {
  const here = attachments.filter((at) => at.s === s).sort((a, b) => byAge(a.route.meta, b.route.meta));
  const byHost = new Map<string | null, StreamRoute>();
  for (const at of here) {
    const kind = at.route.kind as L4RouteKind;
    const hosts = kind === 'TLSRoute' ? at.hosts : [null];
    for (const hostname of hosts)
      if (!byHost.has(hostname))
        byHost.set(hostname, {
          hostname,
          kind,
          route: { namespace: at.route.meta.namespace, name: at.route.meta.name },
          // one rule (read-l4.ts); a route without one serves nothing, its connections closed
          backends: at.backends[0] ?? [],
        });
  }
  const protocol = s.listener.protocol as StreamListenerRoutes['protocol'];
  return {
    gateway: { namespace: gateway.meta.namespace, name: gateway.meta.name },
    listener: s.listener.name,
    port: s.listener.port,
    protocol,
    tlsMode: protocol === 'TLS' ? s.listener.tlsMode : 'Terminate',
    hostname: s.listener.hostname,
    certificates: s.certificates,
    routes: [...byHost.values()].sort((a, b) => compareHostnames(a.hostname, b.hostname)),
    ...(address === undefined ? {} : { address }),
  };
}
