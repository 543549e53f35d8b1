/**
 * gatewayInputOf: what buildGatewayRoutes reads, taken from a Snapshot. Pure; null when the Gateway API is
 * off (no `gateway` build option), so a build without it does no Gateway work at all.
 */
import type { BuildOptions } from '../build.js';
import type { Snapshot } from '../snapshot.js';
import type { GatewayInput } from './build.js';

/** gatewayInputOf gives the Gateway API core's input for a snapshot, or null when the Gateway API is off. */
export function gatewayInputOf(snapshot: Snapshot, options: Pick<BuildOptions, 'gateway'>): GatewayInput | null {
  if (!options.gateway) return null;
  return {
    controllerName: options.gateway.controllerName,
    gatewayClasses: snapshot.gatewayClasses ?? [],
    gateways: snapshot.gateways ?? [],
    httpRoutes: snapshot.httpRoutes ?? [],
    referenceGrants: snapshot.referenceGrants ?? [],
    services: snapshot.services,
    secrets: snapshot.secrets,
    namespaces: snapshot.namespaces ?? [],
  };
}
