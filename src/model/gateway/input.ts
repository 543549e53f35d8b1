/**
 * gatewayInputOf: the one place a build turns the Snapshot and the flags into the Gateway API core's input. Pure.
 */
import type { GatewayOptions } from '../build-types.js';
import type { Snapshot } from '../snapshot.js';
import type { GatewayInput } from './build.js';

/** gatewayInputOf is the core's input from a Snapshot; absent Gateway API lists are empty. */
export function gatewayInputOf(snapshot: Snapshot, options: { readonly gateway?: GatewayOptions }): GatewayInput {
  return {
    controllerName: options.gateway?.controllerName ?? '',
    gatewayClasses: snapshot.gatewayClasses ?? [],
    gateways: snapshot.gateways ?? [],
    httpRoutes: snapshot.httpRoutes ?? [],
    grpcRoutes: snapshot.grpcRoutes ?? [],
    tlsRoutes: snapshot.tlsRoutes ?? [],
    tcpRoutes: snapshot.tcpRoutes ?? [],
    udpRoutes: snapshot.udpRoutes ?? [],
    listenerSets: snapshot.listenerSets ?? [],
    referenceGrants: snapshot.referenceGrants ?? [],
    services: snapshot.services,
    secrets: snapshot.secrets,
    namespaces: snapshot.namespaces ?? [],
    configMaps: snapshot.configMaps,
    ...(options.gateway?.addresses === undefined ? {} : { addresses: options.gateway.addresses }),
  };
}
