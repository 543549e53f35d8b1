/**
 * The HTTP extended features of issue 31, from gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as
 * data: gateway-with-attached-routes.go (…WithPort8080), httproute-redirect-port-and-scheme.go, httproute-named-rule.go,
 * grpcroute-named-rule.go, httproute-backend-protocol-websocket.go.
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase, NN, Step } from '../steps.js';
import { INFRA, SAME_NS } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const HTTPROUTE = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
const acceptedResolved = [
  { type: 'Accepted', status: 'True' as const },
  { type: 'ResolvedRefs', status: 'True' as const },
];
const resolved = (route: NN, gateway: NN): Step => ({
  kind: 'routeCondition',
  route,
  gateway,
  condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
});

/** a 302 to `to` (Go: RedirectRequest; an absent port is the scheme's), for the request to `path` (and `host`) */
const redirect302 = (path: string, to: { scheme: string; port?: string }, host?: string): ExpectedResponse => ({
  request: { path, unfollowRedirect: true, ...(host ? { host } : {}) },
  response: { statusCode: 302 },
  redirectRequest: { ...to, host: 'example.org' },
  namespace: INFRA,
});

const ON_8080 = infra('same-namespace-with-http-listener-on-8080');
const ON_443 = infra('same-namespace-with-https-listener');

export const httpFeatureCases: ConformanceCase[] = [
  {
    name: 'GatewayWithAttachedRoutesWithPort8080',
    steps: [
      {
        kind: 'gatewayListeners',
        gateway: infra('gateway-with-two-listeners-and-one-attached-route'),
        listeners: [
          { name: 'http-unattached', supportedKinds: HTTPROUTE, attachedRoutes: 0, conditions: acceptedResolved },
          { name: 'http', supportedKinds: HTTPROUTE, attachedRoutes: 1, conditions: acceptedResolved },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteRedirectPortAndScheme',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-route-for-listener-on-port-80')] },
      resolved(infra('http-route-for-listener-on-port-80'), SAME_NS),
      { kind: 'accepted', gateway: ON_8080, routes: [infra('http-route-for-listener-on-port-8080')] },
      resolved(infra('http-route-for-listener-on-port-8080'), ON_8080),
      { kind: 'accepted', gateway: ON_443, routes: [infra('http-route-for-listener-on-port-443')] },
      resolved(infra('http-route-for-listener-on-port-443'), ON_443),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'http' }),
          redirect302('/scheme-nil-and-port-80', { scheme: 'http' }),
          redirect302('/scheme-nil-and-port-8080', { scheme: 'http', port: '8080' }),
          redirect302('/scheme-https-and-port-nil', { scheme: 'https' }),
          redirect302('/scheme-https-and-port-443', { scheme: 'https' }),
          redirect302('/scheme-https-and-port-8443', { scheme: 'https', port: '8443' }),
        ],
      },
      {
        kind: 'requests',
        gateway: ON_8080,
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'http', port: '8080' }),
          redirect302('/scheme-nil-and-port-80', { scheme: 'http' }),
          redirect302('/scheme-https-and-port-nil', { scheme: 'https' }),
        ],
      },
      {
        kind: 'requests',
        gateway: ON_443,
        scheme: 'https',
        cases: [
          redirect302('/scheme-nil-and-port-nil', { scheme: 'https' }, 'example.org'),
          redirect302('/scheme-nil-and-port-443', { scheme: 'https' }, 'example.org'),
          redirect302('/scheme-nil-and-port-8443', { scheme: 'https', port: '8443' }, 'example.org'),
          redirect302('/scheme-http-and-port-nil', { scheme: 'http' }, 'example.org'),
          redirect302('/scheme-http-and-port-80', { scheme: 'http' }, 'example.org'),
          redirect302('/scheme-http-and-port-8080', { scheme: 'http', port: '8080' }, 'example.org'),
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-named-rules')] },
      resolved(infra('http-named-rules'), SAME_NS),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: ['/named', '/unnamed'].map((path) => ({
          request: { path },
          response: { statusCode: 200 },
          namespace: INFRA,
        })),
      },
    ],
  },
  {
    name: 'GRPCRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('grpc-named-rules')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          { method: 'Echo', backend: 'grpc-infra-backend-v1', namespace: INFRA },
          { method: 'EchoTwo', backend: 'grpc-infra-backend-v2', namespace: INFRA },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-named-rules')] },
      resolved(infra('http-named-rules'), SAME_NS),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: ['/named', '/unnamed'].map((path) => ({
          request: { path },
          response: { statusCode: 200 },
          namespace: INFRA,
        })),
      },
    ],
  },
  {
    name: 'GRPCRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('grpc-named-rules')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          { method: 'Echo', backend: 'grpc-infra-backend-v1', namespace: INFRA },
          { method: 'EchoTwo', backend: 'grpc-infra-backend-v2', namespace: INFRA },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('http-named-rules')] },
      resolved(infra('http-named-rules'), SAME_NS),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: ['/named', '/unnamed'].map((path) => ({
          request: { path },
          response: { statusCode: 200 },
          namespace: INFRA,
        })),
      },
    ],
  },
  {
    name: 'GRPCRouteNamedRule',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('grpc-named-rules')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          { method: 'Echo', backend: 'grpc-infra-backend-v1', namespace: INFRA },
          { method: 'EchoTwo', backend: 'grpc-infra-backend-v2', namespace: INFRA },
        ],
      },
    ],
  },
  {
    name: 'HTTPRouteBackendProtocolWebSocket',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('backend-protocol-ws')] },
      {
        kind: 'websocket',
        gateway: SAME_NS,
        origin:
          'ws://gateway/TestConformance/HTTPRouteBackendProtocolWebSocket/websocket_connection_should_reach_backend',
      },
    ],
  },
];
