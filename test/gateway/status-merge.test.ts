/**
 * The Gateway API status as written (src/model/gateway/status-merge.ts): lastTransitionTime kept while type, status,
 * reason and observedGeneration stay; other condition types kept; other controllers' parents[] entries untouched and
 * ours dropped when the route names no Gateway of ours; addresses typed.
 */
import { describe, expect, it } from 'vitest';
import type { RouteParentStatus } from '../../src/model/gateway/routes.js';
import {
  apiTime,
  gatewayAddresses,
  gatewayStatus,
  listenerSetStatus,
  mergeConditions,
  routeStatus,
  sameJson,
} from '../../src/model/gateway/status-merge.js';
import type { Condition } from '../../src/model/gateway/types.js';

const THEN = '2026-01-01T00:00:00Z';
const NOW = '2026-06-01T12:00:00Z';
const cond = (type: string, status: 'True' | 'False', reason: string, gen = 1, message = 'm'): Condition => ({
  type,
  status,
  reason,
  message,
  observedGeneration: gen,
});
const OURS = 'ingress-actors.io/gateway-controller';

describe('mergeConditions', () => {
  it('keeps lastTransitionTime while type, status, reason and observedGeneration stay (a new message included)', () => {
    const current = [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }];
    expect(mergeConditions(current, [cond('Accepted', 'True', 'Accepted', 1, 'new words')], NOW)).toEqual([
      { ...cond('Accepted', 'True', 'Accepted', 1, 'new words'), lastTransitionTime: THEN },
    ]);
  });

  it.each([
    ['status', cond('Accepted', 'False', 'Accepted')],
    ['reason', cond('Accepted', 'True', 'Other')],
    ['observedGeneration', cond('Accepted', 'True', 'Accepted', 2)],
  ])('takes the new time when the %s changes', (_what, next) => {
    const current = [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }];
    expect(mergeConditions(current, [next], NOW)).toEqual([{ ...next, lastTransitionTime: NOW }]);
  });

  it('keeps condition types it does not set, after its own; a new type gets the time', () => {
    const foreign = { type: 'SupportedVersion', status: 'True', reason: 'x', lastTransitionTime: THEN };
    expect(mergeConditions([foreign], [cond('Accepted', 'True', 'Accepted')], NOW)).toEqual([
      { ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: NOW },
      foreign,
    ]);
    expect(mergeConditions('not a list', [cond('Accepted', 'True', 'Accepted')], NOW)).toHaveLength(1);
  });
});

describe('the objects’ status', () => {
  it('a Gateway: typed addresses, conditions merged, listeners by name, no addresses when none are known', () => {
    const current = {
      addresses: [{ type: 'IPAddress', value: '10.0.0.1' }],
      conditions: [{ ...cond('Programmed', 'True', 'Programmed'), lastTransitionTime: THEN }],
      listeners: [
        { name: 'http', conditions: [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }] },
      ],
    };
    const ours = {
      namespace: 'default',
      name: 'web',
      conditions: [cond('Programmed', 'True', 'Programmed')],
      listeners: [
        {
          name: 'http',
          supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
          attachedRoutes: 2,
          conditions: [cond('Accepted', 'True', 'Accepted')],
        },
      ],
    };
    const addresses = gatewayAddresses([{ ip: '203.0.113.10' }, { hostname: 'lb.example.com' }]);
    expect(addresses).toEqual([
      { type: 'IPAddress', value: '203.0.113.10' },
      { type: 'Hostname', value: 'lb.example.com' },
    ]);
    expect(gatewayStatus(current, ours, addresses, NOW)).toEqual({
      addresses,
      conditions: [{ ...cond('Programmed', 'True', 'Programmed'), lastTransitionTime: THEN }],
      listeners: [
        {
          name: 'http',
          supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
          attachedRoutes: 2,
          conditions: [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }],
        },
      ],
    });
    expect(gatewayStatus(current, ours, [], NOW)).not.toHaveProperty('addresses');
  });

  it('a Gateway with its own pool address (--gateway-addresses): that one, not the publish address; none: none', () => {
    const current = { addresses: [{ type: 'IPAddress', value: '127.0.0.1' }], conditions: [], listeners: [] };
    const ours = { namespace: 'default', name: 'web', conditions: [], listeners: [] };
    const publish = gatewayAddresses([{ ip: '127.0.0.1' }]);
    expect(gatewayStatus(current, { ...ours, addresses: ['127.0.0.201'] }, publish, NOW).addresses).toEqual([
      { type: 'IPAddress', value: '127.0.0.201' },
    ]);
    expect(gatewayStatus(current, { ...ours, addresses: [] }, publish, NOW)).not.toHaveProperty('addresses');
    expect(gatewayStatus(current, ours, publish, NOW).addresses).toEqual(publish);
  });

  const theirs = {
    parentRef: { name: 'elsewhere' },
    controllerName: 'example.com/other',
    conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', lastTransitionTime: THEN }],
  };
  const ourParent: RouteParentStatus = {
    parentRef: {
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
      namespace: 'default',
      name: 'web',
      sectionName: undefined,
      port: undefined,
    },
    controllerName: OURS,
    conditions: [cond('Accepted', 'True', 'Accepted')],
  };

  it('a route: other controllers’ entries untouched, ours matched by parentRef (defaults as written) and merged', () => {
    const current = {
      parents: [
        theirs,
        {
          parentRef: { name: 'web' },
          controllerName: OURS,
          conditions: [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }],
        },
      ],
    };
    expect(routeStatus(current, 'default', OURS, [ourParent], NOW)).toEqual({
      parents: [
        theirs,
        {
          parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'web' },
          controllerName: OURS,
          conditions: [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }],
        },
      ],
    });
  });

  it('a route that names no Gateway of ours any more loses our entry, keeps theirs', () => {
    const current = { parents: [theirs, { parentRef: { name: 'web' }, controllerName: OURS, conditions: [] }] };
    expect(routeStatus(current, 'default', OURS, undefined, NOW)).toEqual({ parents: [theirs] });
  });
});

describe('ListenerSets', () => {
  const gw = (attachedListenerSets?: number) => ({
    namespace: 'default',
    name: 'gw',
    conditions: [cond('Accepted', 'True', 'Accepted')],
    listeners: [],
    addresses: ['127.0.0.9'],
    ...(attachedListenerSets === undefined ? {} : { attachedListenerSets }),
  });

  it("a Gateway's attachedListenerSets is written when the build says, and goes when it says none", () => {
    expect(gatewayStatus({}, gw(2), [], NOW)).toMatchObject({ attachedListenerSets: 2 });
    expect(gatewayStatus({ attachedListenerSets: 2 }, gw(), [], NOW)).not.toHaveProperty('attachedListenerSets');
  });

  it("a ListenerSet: conditions merged, listeners by name (the written ones' times kept), other fields kept", () => {
    const current = {
      conditions: [{ ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN }],
      listeners: [
        {
          name: 'a',
          attachedRoutes: 0,
          conditions: [{ ...cond('Programmed', 'True', 'Programmed'), lastTransitionTime: THEN }],
        },
        { name: 'gone', attachedRoutes: 0, conditions: [] },
      ],
    };
    const ours = {
      namespace: 'team',
      name: 'ls',
      conditions: [cond('Accepted', 'True', 'Accepted'), cond('Programmed', 'True', 'Programmed')],
      listeners: [
        {
          name: 'a',
          supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
          attachedRoutes: 1,
          conditions: [cond('Programmed', 'True', 'Programmed')],
        },
      ],
    };
    expect(listenerSetStatus(current, ours, NOW)).toEqual({
      conditions: [
        { ...cond('Accepted', 'True', 'Accepted'), lastTransitionTime: THEN },
        { ...cond('Programmed', 'True', 'Programmed'), lastTransitionTime: NOW },
      ],
      listeners: [
        {
          name: 'a',
          supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
          attachedRoutes: 1,
          conditions: [{ ...cond('Programmed', 'True', 'Programmed'), lastTransitionTime: THEN }],
        },
      ],
    });
  });
});

describe('helpers', () => {
  it('apiTime is RFC 3339 in whole seconds, as metav1.Time', () => {
    expect(apiTime(new Date('2026-06-01T12:00:00.789Z'))).toBe('2026-06-01T12:00:00Z');
  });

  it('sameJson ignores key order and undefined, not values', () => {
    expect(sameJson({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
  });
});
