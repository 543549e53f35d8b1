/**
 * Issue 27, "bound the regexes per host": the regexes one host tries on a request (Ingress use-regex paths, the
 * Gateway router's path, header and query regexes) weigh at most MAX_REGEX_WEIGHT_PER_HOST together; the newest
 * object's regex that goes over is left out with a problem on its field, and everything else keeps being served.
 */
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { buildGatewayRoutes } from '../../src/model/gateway/index.js';
import { MAX_REGEX_WEIGHT_PER_HOST } from '../../src/model/regex-budget.js';
import { regexWeight } from '../../src/model/regex-path.js';
import { emptySnapshot } from '../../src/model/snapshot.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { input, route, rule } from '../gateway/fixtures.js';

const created = (object: ReturnType<typeof ingress>, at: string) => ({
  ...object,
  metadata: { ...object.metadata, creationTimestamp: at },
});

describe('issue 27: the regex budget of an Ingress host', () => {
  const heavy = '/.*\\.(jpg|png)$'; // weight 9 with nginx's ^…
  const count = Math.floor(MAX_REGEX_WEIGHT_PER_HOST / regexWeight(heavy));
  const paths = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({
      path: `/${prefix}${i}${heavy.slice(1)}`,
      pathType: 'ImplementationSpecific' as const,
      service: 'web',
    }));
  const regex = { 'nginx.ingress.kubernetes.io/use-regex': 'true' };

  it('leaves out the newest regex paths past the budget, with a problem on each, and keeps the rest', () => {
    const older = created(
      ingress('z-old', { 'a.example': paths(count, 'o') }, { annotations: regex }),
      '2026-01-01T00:00:00Z',
    );
    const newer = created(
      ingress(
        'a-new',
        { 'a.example': [...paths(2, 'n'), { path: '/plain', pathType: 'Prefix', service: 'web' }] },
        {
          annotations: regex,
          namespace: 'tenant',
        },
      ),
      '2026-02-01T00:00:00Z',
    );
    const { model, problems } = buildModel(
      { ...emptySnapshot, ingressClasses: [ingressClass()], ingresses: [newer, older] } as never,
      defaultBuildOptions,
    );
    const server = model.servers.find((s) => s.host === 'a.example')!;
    const matches = server.locations.map((l) => l.match);
    // every path of the older Ingress is served; the newer's regexes are not, its plain path is
    for (let i = 0; i < count; i++) expect(matches).toContain(`^/o${i}${heavy.slice(1)}`);
    expect(matches.some((m) => m.startsWith('^/n'))).toBe(false);
    expect(matches.some((m) => m.includes('/plain'))).toBe(true);
    const budget = problems.filter((p) => p.message.includes('already tries regexes'));
    expect(budget.map((p) => `${p.namespace}/${p.name} ${p.field}`)).toEqual([
      'tenant/a-new spec.rules[0].http.paths[0].path',
      'tenant/a-new spec.rules[0].http.paths[1].path',
    ]);
    expect(budget[0]!.message).toContain(`at most ${MAX_REGEX_WEIGHT_PER_HOST}`);
  });

  it('counts per host: the same paths on another host fit', () => {
    const older = created(
      ingress('old', { 'a.example': paths(count, 'o') }, { annotations: regex }),
      '2026-01-01T00:00:00Z',
    );
    const other = created(
      ingress('new', { 'b.example': paths(count, 'n') }, { annotations: regex }),
      '2026-02-01T00:00:00Z',
    );
    const { problems } = buildModel(
      { ...emptySnapshot, ingressClasses: [ingressClass()], ingresses: [older, other] } as never,
      defaultBuildOptions,
    );
    expect(problems.filter((p) => p.message.includes('already tries regexes'))).toEqual([]);
  });
});

describe('issue 27: the regex budget of a Gateway host', () => {
  const header = (i: number) => ({ type: 'RegularExpression', name: `x-h${i}`, value: '[a-z]*x' });
  const perMatch = 5 * regexWeight('[a-z]*x', 'both');

  it('leaves out the newest route matches past the budget, oldest first whatever the names', () => {
    const fits = Math.floor(MAX_REGEX_WEIGHT_PER_HOST / perMatch);
    const oldMatches = Array.from({ length: fits }, (_, i) => ({
      path: { type: 'PathPrefix', value: `/o${i}` },
      headers: [0, 1, 2, 3, 4].map(header),
    }));
    const rules = Array.from({ length: Math.ceil(fits / 16) }, (_, r) => rule(oldMatches.slice(r * 16, r * 16 + 16)));
    const old = route('z-old', { hostnames: ['a.example'], rules, created: '2026-01-01T00:00:00Z' });
    const tenant = route('a-new', {
      hostnames: ['a.example'],
      created: '2026-02-01T00:00:00Z',
      rules: [
        rule([
          { path: { type: 'RegularExpression', value: '/n/.*' }, headers: [0, 1, 2, 3, 4].map(header) },
          { path: { type: 'Exact', value: '/n-plain' } },
        ]),
      ],
    });
    const built = buildGatewayRoutes(input({ httpRoutes: [tenant, old] }));
    const served = built.listeners[0]!.hosts.find((h) => h.hostname === 'a.example')!.routes;
    expect(served.filter((r) => r.route.name === 'z-old')).toHaveLength(fits);
    expect(served.filter((r) => r.route.name === 'a-new').map((r) => r.match.path.value)).toEqual(['/n-plain']);
    expect(built.problems).toEqual([
      expect.objectContaining({
        kind: 'HTTPRoute',
        namespace: 'default',
        name: 'a-new',
        field: 'spec.rules[0].matches[0]',
        message: expect.stringContaining(`at most ${MAX_REGEX_WEIGHT_PER_HOST}`),
      }),
    ]);
    // the route is served in part: the spec's PartiallyInvalid, beside Accepted
    const parent = built.status.httpRoutes.find((r) => r.name === 'a-new')!.parents[0]!;
    expect(parent.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'PartiallyInvalid=True/UnsupportedValue',
    ]);
    expect(parent.conditions[2]!.message).toContain('spec.rules[0].matches[0]: host "a.example" already tries');
    expect(built.status.httpRoutes.find((r) => r.name === 'z-old')!.parents[0]!.conditions).toHaveLength(2);
  });

  it("refuses the issue's 128 catastrophic header regexes at reading: the route is not accepted, nothing is served", () => {
    const matches = Array.from({ length: 8 }, () => ({
      headers: Array.from({ length: 16 }, (_, i) => ({ type: 'RegularExpression', name: `x-q${i}`, value: '(a|aa)+' })),
    }));
    const built = buildGatewayRoutes(
      input({ httpRoutes: [route('hostile', { hostnames: ['a.example'], rules: [rule(matches)] })] }),
    );
    expect(built.problems.length).toBeGreaterThan(0);
    expect(built.problems[0]!.message).toContain('two ways to match the same text');
    expect(built.status.httpRoutes[0]!.parents[0]!.conditions[0]).toMatchObject({
      type: 'Accepted',
      status: 'False',
      reason: 'UnsupportedValue',
    });
  });
});
