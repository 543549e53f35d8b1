/**
 * The Gateway API kinds as the test API server's `extraKinds`, for tests that need them served from the start
 * (without applying the CRDs): GatewayClass, Gateway, HTTPRoute, GRPCRoute (v1) and ReferenceGrant (v1beta1),
 * with the status subresource where the CRDs have one.
 */
import type { ResourceDef } from '../../src/dev/api-server/resources.js';

const GROUP = 'gateway.networking.k8s.io';

const def = (
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  hasStatus: boolean,
  shortNames: string[] = [],
): ResourceDef => ({
  group: GROUP,
  version,
  kind,
  plural,
  singular: kind.toLowerCase(),
  namespaced,
  shortNames,
  categories: ['gateway-api'],
  hasStatus,
});

/** GATEWAY_RESOURCES serve the Gateway API's standard-channel kinds in the test API server. */
export const GATEWAY_RESOURCES: readonly ResourceDef[] = [
  def('v1', 'GatewayClass', 'gatewayclasses', false, true, ['gc']),
  def('v1', 'Gateway', 'gateways', true, true, ['gtw']),
  def('v1', 'HTTPRoute', 'httproutes', true, true),
  def('v1', 'GRPCRoute', 'grpcroutes', true, true),
  def('v1beta1', 'ReferenceGrant', 'referencegrants', true, false, ['refgrant']),
];
