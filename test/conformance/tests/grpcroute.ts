/**
 * GRPCRoute core tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data: the Go test's waits
 * and its grpc.ExpectedResponse table, case for case (grpcroute-exact-method-matching.go, -header-matching.go,
 * -listener-hostname-matching.go, grpcroute-weight.go). The calls are h2c to the Gateway's address, as the Go suite's client makes them.
 */
import * as grpc from '@grpc/grpc-js';
import type { ConformanceCase, GrpcExpected, NN } from '../steps.js';
import { INFRA, SAME_NS } from './httproute-routing.js';

const V1 = 'grpc-infra-backend-v1';
const V2 = 'grpc-infra-backend-v2';
const V3 = 'grpc-infra-backend-v3';
const UNIMPLEMENTED = grpc.status.UNIMPLEMENTED;

/** echo is an Echo call answered by `backend`, with the given metadata or :authority. */
const echo = (
  backend: string,
  request: { metadata?: Record<string, string>; authority?: string } = {},
): GrpcExpected => ({
  method: 'Echo',
  ...request,
  backend,
  namespace: INFRA,
});
/** unimplemented is an Echo call answered Unimplemented (no route: the Gateway's 404 is that code). */
const unimplemented = (request: { metadata?: Record<string, string>; authority?: string }): GrpcExpected => ({
  method: 'Echo',
  ...request,
  code: UNIMPLEMENTED,
});
const infra = (name: string): NN => ({ namespace: INFRA, name });

export const grpcCases: ConformanceCase[] = [
  {
    name: 'GRPCExactMethodMatching',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('exact-matching')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          { method: 'Echo', backend: V1, namespace: INFRA },
          { method: 'EchoTwo', backend: V2, namespace: INFRA },
          { method: 'EchoThree', code: UNIMPLEMENTED },
        ],
      },
    ],
  },
  {
    name: 'GRPCRouteHeaderMatching',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('grpc-header-matching')], routeKind: 'GRPCRoute' },
      {
        kind: 'grpcRequests',
        gateway: SAME_NS,
        cases: [
          echo(V1, { metadata: { Version: 'one' } }),
          echo(V2, { metadata: { Version: 'two' } }),
          echo(V1, { metadata: { Version: 'two', Color: 'orange' } }),
          echo(V2, { metadata: { Version: 'two', Color: 'blue' } }),
          unimplemented({ metadata: { Color: 'orange' } }),
          unimplemented({ metadata: { 'Some-Other-Header': 'one' } }),
          echo(V1, { metadata: { Color: 'blue' } }),
          echo(V1, { metadata: { Color: 'green' } }),
          echo(V2, { metadata: { Color: 'red' } }),
          echo(V2, { metadata: { Color: 'yellow' } }),
          unimplemented({ metadata: { Color: 'purple' } }),
        ],
      },
    ],
  },
  {
    name: 'GRPCRouteListenerHostnameMatching',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      {
        kind: 'accepted',
        gateway: infra('grpcroute-listener-hostname-matching'),
        listeners: ['listener-1'],
        routes: [infra('backend-v1')],
        routeKind: 'GRPCRoute',
      },
      {
        kind: 'accepted',
        gateway: infra('grpcroute-listener-hostname-matching'),
        listeners: ['listener-2'],
        routes: [infra('backend-v2')],
        routeKind: 'GRPCRoute',
      },
      {
        kind: 'accepted',
        gateway: infra('grpcroute-listener-hostname-matching'),
        listeners: ['listener-3', 'listener-4'],
        routes: [infra('backend-v3')],
        routeKind: 'GRPCRoute',
      },
      {
        kind: 'grpcRequests',
        gateway: infra('grpcroute-listener-hostname-matching'),
        cases: [
          echo(V1, { authority: 'bar.com' }),
          echo(V2, { authority: 'foo.bar.com' }),
          echo(V3, { authority: 'baz.bar.com' }),
          echo(V3, { authority: 'boo.bar.com' }),
          echo(V3, { authority: 'multiple.prefixes.bar.com' }),
          echo(V3, { authority: 'multiple.prefixes.foo.com' }),
          unimplemented({ authority: 'foo.com' }),
          unimplemented({ authority: 'no.matching.host' }),
        ],
      },
    ],
  },
  {
    name: 'GRPCRouteWeight',
    steps: [
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('weighted-backends')], routeKind: 'GRPCRoute' },
      { kind: 'grpcWeights', gateway: SAME_NS, namespace: INFRA, weights: { [V1]: 0.7, [V2]: 0.3, [V3]: 0.0 } },
    ],
  },
];
