/**
 * The Gateway API core is made afresh on every build. reuseGateway hands back the last build's Gateway model and
 * certificate list when this build's are the same, so that what downstream keys on identity (DynamicSplit's
 * certificate table: its PEMs split and hashed) holds across an unchanged sync instead of being worked out again.
 * Pure: it compares, it never changes what is served.
 */
import type { Certificate, NginxModel } from '../nginx-model.js';
import type { GatewayModel } from './model.js';

/** LastGateway is the part of the previous build's model that the Gateway API adds to. */
export interface LastGateway {
  readonly gateway: GatewayModel | null;
  readonly certificates: readonly Certificate[];
}

/** reuseGateway is `model` with the last build's Gateway model and certificate list where this build's equal them. */
export function reuseGateway(last: LastGateway | null, model: NginxModel): NginxModel {
  if (last === null) return model;
  const gateway = sameGateway(last.gateway, model.gateway) ? last.gateway : model.gateway;
  const certificates = sameItems(last.certificates, model.certificates) ? last.certificates : model.certificates;
  if (gateway === model.gateway && certificates === model.certificates) return model;
  return { ...model, gateway, certificates };
}

/** The routes table's version is a digest of its servers and routes; the servers are few (one per port and host). */
function sameGateway(a: GatewayModel | null, b: GatewayModel | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  return (
    a.routes.version === b.routes.version &&
    JSON.stringify(a.servers) === JSON.stringify(b.servers) &&
    JSON.stringify(a.proxyHeaders) === JSON.stringify(b.proxyHeaders)
  );
}

/** Certificates come from the build's CertificateTable, one object per Secret version: identity is enough. */
const sameItems = <T>(a: readonly T[], b: readonly T[]) =>
  a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
