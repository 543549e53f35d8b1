import { describe, expect, it } from 'vitest';
import { buildGatewayRoutes } from '../../src/model/gateway/index.js';
import { input, route, rule } from './fixtures.js';

const OLD = '2026-01-01T00:00:00Z';
const NEW = '2026-06-01T00:00:00Z';

/** served lists `route#rule` in the order the single listener's single host serves them. */
function served(routes: Record<string, unknown>[]): string[] {
  const result = buildGatewayRoutes(input({ httpRoutes: routes }));
  expect(result.problems).toEqual([]);
  expect(result.listeners).toHaveLength(1);
  const hosts = result.listeners[0]?.hosts ?? [];
  expect(hosts).toHaveLength(1);
  return (hosts[0]?.routes ?? []).map((r) => `${r.route.name}#${r.ruleIndex}`);
}

const prefix = (value: string) => ({ path: { type: 'PathPrefix', value } });

// Each row: two routes that differ in exactly one criterion. The expected winner is the newer route and
// later by name (unless the row is about age or name), so only the criterion under test can put it first.
const rows: { name: string; loser: Record<string, unknown>; winner: Record<string, unknown> }[] = [
  {
    name: 'Exact path beats PathPrefix of the same value',
    loser: route('a', { created: OLD, rules: [rule([prefix('/foo')])] }),
    winner: route('b', { created: NEW, rules: [rule([{ path: { type: 'Exact', value: '/foo' } }])] }),
  },
  {
    name: 'Exact path beats a longer PathPrefix',
    loser: route('a', { created: OLD, rules: [rule([prefix('/foo/bar/baz')])] }),
    winner: route('b', { created: NEW, rules: [rule([{ path: { type: 'Exact', value: '/foo' } }])] }),
  },
  {
    name: 'the longer PathPrefix wins',
    loser: route('a', { created: OLD, rules: [rule([prefix('/foo')])] }),
    winner: route('b', { created: NEW, rules: [rule([prefix('/foo/bar')])] }),
  },
  {
    name: 'a method match wins',
    loser: route('a', { created: OLD, rules: [rule([prefix('/foo')])] }),
    winner: route('b', { created: NEW, rules: [rule([{ ...prefix('/foo'), method: 'GET' }])] }),
  },
  {
    name: 'more header matches win',
    loser: route('a', { created: OLD, rules: [rule([{ ...prefix('/'), headers: [{ name: 'x-a', value: '1' }] }])] }),
    winner: route('b', {
      created: NEW,
      rules: [
        rule([
          {
            ...prefix('/'),
            headers: [
              { name: 'x-a', value: '1' },
              { name: 'x-b', value: '2' },
            ],
          },
        ]),
      ],
    }),
  },
  {
    name: 'more query-param matches win',
    loser: route('a', { created: OLD, rules: [rule([prefix('/')])] }),
    winner: route('b', { created: NEW, rules: [rule([{ ...prefix('/'), queryParams: [{ name: 'v', value: '1' }] }])] }),
  },
  {
    name: 'the older route wins a tie',
    loser: route('a', { created: NEW, rules: [rule([prefix('/')])] }),
    winner: route('b', { created: OLD, rules: [rule([prefix('/')])] }),
  },
  {
    name: 'then the route first by namespace/name',
    loser: route('b', { created: OLD, rules: [rule([prefix('/')])] }),
    winner: route('a', { created: OLD, rules: [rule([prefix('/')])] }),
  },
  {
    name: 'RegularExpression (implementation-specific) comes after Exact',
    loser: route('a', { created: OLD, rules: [rule([{ path: { type: 'RegularExpression', value: '/foo.*' } }])] }),
    winner: route('b', { created: NEW, rules: [rule([{ path: { type: 'Exact', value: '/foo' } }])] }),
  },
  {
    name: 'RegularExpression (implementation-specific) comes before PathPrefix',
    loser: route('a', { created: OLD, rules: [rule([prefix('/foo/bar/baz')])] }),
    winner: route('b', { created: NEW, rules: [rule([{ path: { type: 'RegularExpression', value: '/f.*' } }])] }),
  },
];

describe('HTTPRoute precedence', () => {
  it.each(rows)('$name', ({ loser, winner }) => {
    const w = (winner.metadata as { name: string }).name;
    const l = (loser.metadata as { name: string }).name;
    expect(served([loser, winner])).toEqual([`${w}#0`, `${l}#0`]);
    expect(served([winner, loser])).toEqual([`${w}#0`, `${l}#0`]);
  });

  it('within one route, the first rule wins a tie', () => {
    const r = route('a', { rules: [rule([prefix('/')]), rule([prefix('/')])] });
    expect(served([r])).toEqual(['a#0', 'a#1']);
  });

  it('a rule without matches is a PathPrefix "/" match', () => {
    const result = buildGatewayRoutes(input({ httpRoutes: [route('a')] }));
    expect(result.listeners[0]?.hosts[0]?.routes[0]?.match).toEqual({
      path: { type: 'PathPrefix', value: '/' },
      headers: [],
      queryParams: [],
      method: undefined,
    });
  });
});

describe('ported from the conformance suite (HTTPRouteMatchingAcrossRoutes)', () => {
  it('orders the matches of two routes on shared hostnames', () => {
    const part1 = route('matching-part1', {
      hostnames: ['example.com', 'example.net'],
      rules: [rule([prefix('/'), { headers: [{ name: 'version', value: 'one' }] }])],
    });
    const part2 = route('matching-part2', {
      hostnames: ['example.com'],
      rules: [rule([prefix('/v2'), { headers: [{ name: 'version', value: 'two' }] }])],
    });
    const hosts = buildGatewayRoutes(input({ httpRoutes: [part2, part1] })).listeners[0]?.hosts;
    const order = (hostname: string) =>
      hosts
        ?.find((h) => h.hostname === hostname)
        ?.routes.map((r) => `${r.route.name.slice(-5)}#${r.ruleIndex}.${r.matchIndex}`);
    // `/v2` first; then the header matches on `/` (tied: part1 by name); then part1's bare `/`.
    expect(order('example.com')).toEqual(['part2#0.0', 'part1#0.1', 'part2#0.1', 'part1#0.0']);
    expect(order('example.net')).toEqual(['part1#0.1', 'part1#0.0']);
  });
});
