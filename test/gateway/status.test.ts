import { describe, expect, it } from 'vitest';
import { buildGatewayRoutes, type GatewayInput } from '../../src/model/gateway/index.js';
import {
  CERTIFICATE,
  gateway,
  gatewayClass,
  grant,
  input,
  listener,
  OTHER_KEY,
  route,
  rule,
  service,
  tlsSecret,
} from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';

/** routeConditions is `type=status/reason` for the one parent of route `default/r`. */
function routeConditions(i: GatewayInput): string[] {
  const status = buildGatewayRoutes(i).status.httpRoutes.find((r) => r.name === 'r');
  expect(status?.parents).toHaveLength(1);
  return (status?.parents[0]?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
}

const ok = ['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs'];

// One row per route reason: the smallest change to a working input that produces it.
const routeRows: { name: string; input: GatewayInput; expected: string[] }[] = [
  { name: 'Accepted and ResolvedRefs', input: input({ httpRoutes: [route('r')] }), expected: ok },
  {
    name: 'NoMatchingParent: no listener of that sectionName',
    input: input({ httpRoutes: [route('r', { parentRefs: [{ name: 'gw', sectionName: 'nope' }] })] }),
    expected: ['Accepted=False/NoMatchingParent', 'ResolvedRefs=True/ResolvedRefs'],
  },
  {
    name: 'NoMatchingParent: no listener on that port',
    input: input({ httpRoutes: [route('r', { parentRefs: [{ name: 'gw', port: 8080 }] })] }),
    expected: ['Accepted=False/NoMatchingParent', 'ResolvedRefs=True/ResolvedRefs'],
  },
  {
    name: 'NotAllowedByListeners: route in another namespace, listener allows Same',
    input: input({
      httpRoutes: [route('r', { namespace: 'other', parentRefs: [{ name: 'gw', namespace: 'default' }] })],
      services: [service('web', 'other')],
    }),
    expected: ['Accepted=False/NotAllowedByListeners', 'ResolvedRefs=True/ResolvedRefs'],
  },
  {
    name: 'NotAllowedByListeners: listener allows other kinds only',
    input: input({
      gateways: [gateway([listener('http', { allowedRoutes: { kinds: [{ kind: 'GRPCRoute' }] } })])],
      httpRoutes: [route('r')],
    }),
    expected: ['Accepted=False/NotAllowedByListeners', 'ResolvedRefs=True/ResolvedRefs'],
  },
  {
    name: 'NoMatchingListenerHostname',
    input: input({
      gateways: [gateway([listener('http', { hostname: 'foo.example.com' })])],
      httpRoutes: [route('r', { hostnames: ['bar.example.com'] })],
    }),
    expected: ['Accepted=False/NoMatchingListenerHostname', 'ResolvedRefs=True/ResolvedRefs'],
  },
  {
    name: 'BackendNotFound: no such Service',
    input: input({ httpRoutes: [route('r', { rules: [{ backendRefs: [{ name: 'gone', port: 80 }] }] })] }),
    expected: ['Accepted=True/Accepted', 'ResolvedRefs=False/BackendNotFound'],
  },
  {
    name: 'BackendNotFound: the Service has no such port',
    input: input({ httpRoutes: [route('r', { rules: [{ backendRefs: [{ name: 'web', port: 81 }] }] })] }),
    expected: ['Accepted=True/Accepted', 'ResolvedRefs=False/BackendNotFound'],
  },
  {
    name: 'RefNotPermitted: a Service in another namespace without a ReferenceGrant',
    input: input({
      httpRoutes: [route('r', { rules: [{ backendRefs: [{ name: 'web', namespace: 'other', port: 80 }] }] })],
      services: [service('web', 'other')],
    }),
    expected: ['Accepted=True/Accepted', 'ResolvedRefs=False/RefNotPermitted'],
  },
  {
    name: 'InvalidKind: a backendRef that is not a Service',
    input: input({
      httpRoutes: [route('r', { rules: [{ backendRefs: [{ group: 'example.io', kind: 'Bucket', name: 'b' }] }] })],
    }),
    expected: ['Accepted=True/Accepted', 'ResolvedRefs=False/InvalidKind'],
  },
  ...(
    [
      ['a path nginx would misread', [rule([{ path: { type: 'PathPrefix', value: '/a;b' } }])]],
      ['a path with $', [rule([{ path: { type: 'Exact', value: '/$host' } }])]],
      ['a regex outside the safe subset', [rule([{ path: { type: 'RegularExpression', value: '/(a)\\1' } }])]],
      ['an unknown path type', [rule([{ path: { type: 'Glob', value: '/a' } }])]],
      ['an unknown method', [rule([{ method: 'BREW' }])]],
      ['a header name with _', [rule([{ headers: [{ name: 'x_a', value: '1' }] }])]],
      ['a header value with a quote', [rule([{ headers: [{ name: 'x-a', value: 'a"b' }] }])]],
      ['a query-param name with =', [rule([{ queryParams: [{ name: 'a=b', value: '1' }] }])]],
      ['an unsupported filter', [rule([], { filters: [{ type: 'RequestMirror', requestMirror: {} }] })]],
      [
        'a header to set with $',
        [
          rule([], {
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x', value: '$x' }] } }],
          }),
        ],
      ],
      [
        'a redirect status code',
        [rule([], { filters: [{ type: 'RequestRedirect', requestRedirect: { statusCode: 305 } }] })],
      ],
      [
        'ReplacePrefixMatch on an Exact match',
        [
          rule([{ path: { type: 'Exact', value: '/a' } }], {
            filters: [
              { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/b' } } },
            ],
          }),
        ],
      ],
      [
        'a wildcard redirect hostname',
        [rule([], { filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: '*.a.com' } }] })],
      ],
      ['a weight out of range', [{ backendRefs: [{ name: 'web', port: 80, weight: -1 }] }]],
      ['a Service backend without a port', [{ backendRefs: [{ name: 'web' }] }]],
      ['a rule name that is not a SectionName', [rule([], { name: 'Named Rule;' })]],
      [
        'a backendRef filter other than RequestHeaderModifier',
        [{ backendRefs: [{ name: 'web', port: 80, filters: [{ type: 'URLRewrite', urlRewrite: {} }] }] }],
      ],
    ] as const
  ).map(([what, rules]) => ({
    name: `UnsupportedValue: ${what}`,
    input: input({ httpRoutes: [route('r', { rules: rules as unknown as Record<string, unknown>[] })] }),
    expected: ['Accepted=False/UnsupportedValue', expect.stringMatching(/^ResolvedRefs=/) as unknown as string],
  })),
];

describe('HTTPRoute parents[] status', () => {
  it.each(routeRows)('$name', ({ input: i, expected }) => {
    expect(routeConditions(i)).toEqual(expected);
  });

  it('an invalid route is not served, names the field, and leaves a valid route serving', () => {
    const bad = route('bad', { rules: [rule([{ path: { type: 'Exact', value: '/a{b' } }])] });
    const result = buildGatewayRoutes(input({ httpRoutes: [bad, route('good')] }));
    const names = result.listeners[0]?.hosts.flatMap((h) => h.routes.map((r) => r.route.name));
    expect(names).toEqual(['good']);
    expect(result.problems).toEqual([
      expect.objectContaining({
        kind: 'HTTPRoute',
        namespace: 'default',
        name: 'bad',
        field: 'spec.rules[0].matches[0].path.value',
      }),
    ]);
  });

  it('keeps observedGeneration and names the controller', () => {
    const status = buildGatewayRoutes(input({ httpRoutes: [route('r', { generation: 7 })] })).status.httpRoutes[0];
    expect(status?.parents[0]?.controllerName).toBe('ingress-actors.io/gateway-controller');
    expect(status?.parents[0]?.conditions.map((c) => c.observedGeneration)).toEqual([7, 7]);
  });

  it('writes nothing for parents of another controller or of another kind', () => {
    // Even with a value we would refuse: another controller's route is not ours to complain about.
    const routes = [
      route('r', {
        parentRefs: [{ name: 'theirs' }, { kind: 'Service', group: '', name: 'mesh' }],
        rules: [rule([{ path: { type: 'Exact', value: '/$x' } }], { backendRefs: [{ name: 'gone', port: 1 }] })],
      }),
    ];
    const theirs = gateway(undefined, 'theirs', 'default', { gatewayClassName: 'other' });
    const result = buildGatewayRoutes(
      input({
        gatewayClasses: [gatewayClass(), gatewayClass('other', 'example.com/other')],
        gateways: [gateway(), theirs],
        httpRoutes: routes,
      }),
    );
    expect(result.status.httpRoutes).toEqual([]);
    expect(result.problems).toEqual([]);
    expect(result.status.gatewayClasses.map((c) => c.name)).toEqual(['ours']);
    expect(result.status.gateways.map((g) => g.name)).toEqual(['gw']);
  });

  it('an unresolved backend keeps its weight share beside the resolved one', () => {
    const r = route('r', {
      rules: [
        {
          backendRefs: [
            { name: 'web', port: 80, weight: 3 },
            { name: 'gone', port: 80, weight: 1 },
          ],
        },
      ],
    });
    const served = buildGatewayRoutes(input({ httpRoutes: [r] })).listeners[0]?.hosts[0]?.routes[0];
    expect(served?.backends).toEqual([
      { kind: 'service', namespace: 'default', name: 'web', port: 80, weight: 3 },
      { kind: 'unresolved', weight: 1, reason: 'BackendNotFound' },
    ]);
  });
});

/** listenerConditions is `type=status/reason` of listener `name` of Gateway default/gw. */
function listenerConditions(i: GatewayInput, name: string): string[] {
  const gw = buildGatewayRoutes(i).status.gateways.find((g) => g.name === 'gw');
  const l = gw?.listeners.find((x) => x.name === name);
  return (l?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
}

const https = (refs: Record<string, unknown>[]) =>
  listener('https', { port: 443, protocol: 'HTTPS', tls: { certificateRefs: refs } });

/** a Gateway's `spec.infrastructure` naming parameters, as the conformance suite's GatewayInvalidParametersRef does */
const PARAMETERS = {
  infrastructure: { parametersRef: { group: 'invalid.io', kind: 'InvalidParameters', name: 'invalid' } },
};

const listenerRows: { name: string; input: GatewayInput; listener: string; expected: string[] }[] = [
  {
    name: 'a valid HTTP listener',
    input: input(),
    listener: 'http',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=True/Programmed',
    ],
  },
  {
    name: 'UnsupportedProtocol',
    // a domain-prefixed protocol (the CRD allows them): none is served
    input: input({ gateways: [gateway([listener('tcp', { protocol: 'example.com/sctp' })])] }),
    listener: 'tcp',
    expected: [
      'Accepted=False/UnsupportedProtocol',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'UnsupportedValue: a hostname that is an IP',
    input: input({ gateways: [gateway([listener('http', { hostname: '10.0.0.1' })])] }),
    listener: 'http',
    expected: [
      'Accepted=False/UnsupportedValue',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'ProtocolConflict: HTTPS on a port an HTTP listener holds',
    input: input({
      gateways: [
        gateway([
          listener('http'),
          listener('https', { protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'c' }] } }),
        ]),
      ],
      secrets: [tlsSecret('c')],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=True/ProtocolConflict',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'HostnameConflict: two listeners with one port and hostname',
    input: input({ gateways: [gateway([listener('a', { hostname: 'a.com' }), listener('b', { hostname: 'a.com' })])] }),
    listener: 'b',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=True/HostnameConflict',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'InvalidRouteKinds',
    input: input({ gateways: [gateway([listener('http', { allowedRoutes: { kinds: [{ kind: 'TCPRoute' }] } })])] }),
    listener: 'http',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/InvalidRouteKinds',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'HTTPS with a TLS Secret in its namespace',
    input: input({ gateways: [gateway([https([{ name: 'c' }])])], secrets: [tlsSecret('c')] }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=True/Programmed',
    ],
  },
  {
    name: 'InvalidCertificateRef: the Secret is missing',
    input: input({ gateways: [gateway([https([{ name: 'c' }])])] }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/InvalidCertificateRef',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    // the conformance suite's malformed-certificate: base64 of "Hello world" as both certificate and key
    name: 'InvalidCertificateRef: tls.crt and tls.key are not PEM',
    input: input({
      gateways: [gateway([https([{ name: 'c' }])])],
      secrets: [tlsSecret('c', 'default', { crt: 'Hello world\n', key: 'Hello world\n' })],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/InvalidCertificateRef',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'InvalidCertificateRef: tls.key does not match the certificate',
    input: input({
      gateways: [gateway([https([{ name: 'c' }])])],
      secrets: [tlsSecret('c', 'default', { crt: CERTIFICATE, key: OTHER_KEY })],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/InvalidCertificateRef',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'InvalidCertificateRef: a good Secret beside a malformed one',
    input: input({
      gateways: [gateway([https([{ name: 'c' }, { name: 'bad' }])])],
      secrets: [tlsSecret('c'), tlsSecret('bad', 'default', { crt: CERTIFICATE, key: 'x' })],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/InvalidCertificateRef',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'InvalidParameters on the Gateway: its listeners are valid but not programmed',
    input: input({ gateways: [gateway(undefined, 'gw', 'default', PARAMETERS)] }),
    listener: 'http',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'RefNotPermitted: a Secret in another namespace without a ReferenceGrant',
    input: input({
      gateways: [gateway([https([{ name: 'c', namespace: 'certs' }])])],
      secrets: [tlsSecret('c', 'certs')],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=False/RefNotPermitted',
      'Conflicted=False/NoConflicts',
      'Programmed=False/Invalid',
    ],
  },
  {
    name: 'ResolvedRefs: a Secret in another namespace with a ReferenceGrant',
    input: input({
      gateways: [gateway([https([{ name: 'c', namespace: 'certs' }])])],
      secrets: [tlsSecret('c', 'certs')],
      referenceGrants: [
        grant('certs', [{ group: GROUP, kind: 'Gateway', namespace: 'default' }], [{ group: '', kind: 'Secret' }]),
      ],
    }),
    listener: 'https',
    expected: [
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
      'Conflicted=False/NoConflicts',
      'Programmed=True/Programmed',
    ],
  },
];

describe('Gateway and listener status', () => {
  it.each(listenerRows)('$name', ({ input: i, listener: name, expected }) => {
    expect(listenerConditions(i, name)).toEqual(expected);
  });

  it('Gateway Accepted/Programmed: all valid, some valid, none valid', () => {
    const gw = (listeners: Record<string, unknown>[]) =>
      buildGatewayRoutes(input({ gateways: [gateway(listeners)] })).status.gateways[0]?.conditions.map(
        (c) => `${c.type}=${c.status}/${c.reason}/${c.observedGeneration}`,
      );
    expect(gw([listener('http')])).toEqual(['Accepted=True/Accepted/3', 'Programmed=True/Programmed/3']);
    expect(gw([listener('http'), listener('udp', { port: 53, protocol: 'example.com/sctp' })])).toEqual([
      'Accepted=True/ListenersNotValid/3',
      'Programmed=True/Programmed/3',
    ]);
    expect(gw([listener('udp', { port: 53, protocol: 'example.com/sctp' })])).toEqual([
      'Accepted=False/ListenersNotValid/3',
      'Programmed=False/Invalid/3',
    ]);
  });

  it('a Gateway with spec.infrastructure.parametersRef is not accepted, not served, and its routes not attached', () => {
    const result = buildGatewayRoutes(
      input({ gateways: [gateway(undefined, 'gw', 'default', PARAMETERS)], httpRoutes: [route('r')] }),
    );
    const gw = result.status.gateways[0];
    expect(gw?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}/${c.observedGeneration}`)).toEqual([
      'Accepted=False/InvalidParameters/3',
      'Programmed=False/Invalid/3',
    ]);
    expect(gw?.conditions[0]?.message).toBe(
      'spec.infrastructure.parametersRef names "invalid.io/InvalidParameters invalid": this controller supports no ' +
        'parameters kind, so the Gateway is not accepted and none of its listeners is served',
    );
    expect(gw?.listeners[0]?.attachedRoutes).toBe(0);
    expect(result.listeners).toEqual([]);
    expect(result.status.httpRoutes[0]?.parents[0]?.conditions[0]).toMatchObject({
      type: 'Accepted',
      status: 'False',
      reason: 'NoMatchingParent',
    });
  });

  it('attachedRoutes counts accepted routes per listener', () => {
    const i = input({
      gateways: [gateway([listener('a', { hostname: 'a.com' }), listener('b', { hostname: 'b.com' })])],
      httpRoutes: [route('r1', { hostnames: ['a.com'] }), route('r2'), route('r3', { hostnames: ['c.com'] })],
    });
    const gw = buildGatewayRoutes(i).status.gateways[0];
    expect(gw?.listeners.map((l) => [l.name, l.attachedRoutes])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    // an HTTP listener's default kinds: HTTPRoute and GRPCRoute, as the spec's default for GRPCRoute support
    expect(gw?.listeners[0]?.supportedKinds).toEqual([
      { group: GROUP, kind: 'HTTPRoute' },
      { group: GROUP, kind: 'GRPCRoute' },
    ]);
    const sctp = buildGatewayRoutes(
      input({ gateways: [gateway([listener('sctp', { protocol: 'example.com/sctp' })])] }),
    );
    expect(sctp.status.gateways[0]?.listeners[0]?.supportedKinds).toEqual([]);
    // the stream protocols: one kind each
    const udp = buildGatewayRoutes(input({ gateways: [gateway([listener('udp', { protocol: 'UDP' })])] }));
    expect(udp.status.gateways[0]?.listeners[0]?.supportedKinds).toEqual([{ group: GROUP, kind: 'UDPRoute' }]);
    const mixed = input({
      gateways: [
        gateway([listener('http', { allowedRoutes: { kinds: [{ kind: 'TCPRoute' }, { kind: 'HTTPRoute' }] } })]),
      ],
    });
    const mixedResult = buildGatewayRoutes(mixed);
    expect(mixedResult.status.gateways[0]?.listeners[0]?.supportedKinds).toEqual([{ group: GROUP, kind: 'HTTPRoute' }]);
    // ResolvedRefs is False for the kind it cannot serve, yet HTTPRoutes are served.
    expect(mixedResult.status.gateways[0]?.listeners[0]?.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Accepted=True',
      'ResolvedRefs=False',
      'Conflicted=False',
      'Programmed=True',
    ]);
    expect(mixedResult.listeners.map((l) => l.listener)).toEqual(['http']);
  });

  it('a listener whose certificate is missing still counts attached routes, but is not served', () => {
    const https = listener('https', { port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'gone' }] } });
    const result = buildGatewayRoutes(input({ gateways: [gateway([https])], httpRoutes: [route('r')] }));
    const l = result.status.gateways[0]?.listeners[0];
    expect(l?.attachedRoutes).toBe(1);
    expect(l?.conditions.find((c) => c.type === 'Programmed')?.status).toBe('False');
    expect(result.listeners).toEqual([]);
  });

  it('a route whose two parentRefs select one listener is attached and served once', () => {
    const r = route('r', {
      parentRefs: [
        { name: 'gw', sectionName: 'http' },
        { name: 'gw', port: 80 },
      ],
    });
    const result = buildGatewayRoutes(input({ httpRoutes: [r] }));
    expect(result.status.httpRoutes[0]?.parents).toHaveLength(2);
    expect(result.status.gateways[0]?.listeners[0]?.attachedRoutes).toBe(1);
    expect(result.listeners[0]?.hosts[0]?.routes).toHaveLength(1);
  });
});

describe('GatewayClass status', () => {
  it('ours is Accepted; with parametersRef it is not (none are supported)', () => {
    const classes = [
      gatewayClass(),
      gatewayClass('params', undefined, { parametersRef: { group: 'x', kind: 'y', name: 'z' } }),
    ];
    const status = buildGatewayRoutes(input({ gatewayClasses: classes })).status.gatewayClasses;
    expect(status.map((c) => [c.name, c.conditions.map((x) => `${x.type}=${x.status}/${x.reason}`)])).toEqual([
      ['ours', ['Accepted=True/Accepted']],
      ['params', ['Accepted=False/InvalidParameters']],
    ]);
  });
});

describe('problems name the object and field', () => {
  it.each([
    {
      name: 'an unsupported protocol',
      input: input({
        gateways: [gateway([listener('http'), listener('tcp', { protocol: 'example.com/sctp', port: 9000 })])],
      }),
      expected: { kind: 'Gateway', namespace: 'default', name: 'gw', field: 'spec.listeners[1].protocol' },
    },
    {
      name: 'a missing certificate',
      input: input({
        gateways: [gateway([listener('https', { protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'x' }] } })])],
      }),
      expected: { kind: 'Gateway', namespace: 'default', name: 'gw', field: 'spec.listeners[0].tls.certificateRefs' },
    },
    {
      name: 'a malformed certificate',
      input: input({
        gateways: [gateway([https([{ name: 'c' }])])],
        secrets: [tlsSecret('c', 'default', { crt: 'Hello world\n', key: 'Hello world\n' })],
      }),
      expected: {
        kind: 'Gateway',
        namespace: 'default',
        name: 'gw',
        field: 'spec.listeners[0].tls.certificateRefs',
        message: 'Secret default/c: tls.crt is not a PEM certificate chain',
      },
    },
    {
      name: 'infrastructure parameters',
      input: input({ gateways: [gateway(undefined, 'gw', 'default', PARAMETERS)] }),
      expected: { kind: 'Gateway', namespace: 'default', name: 'gw', field: 'spec.infrastructure.parametersRef' },
    },
    {
      name: 'a listener hostname',
      input: input({ gateways: [gateway([listener('http', { hostname: 'a b' })])] }),
      expected: { kind: 'Gateway', namespace: 'default', name: 'gw', field: 'spec.listeners[0].hostname' },
    },
    {
      name: 'a route hostname',
      input: input({ httpRoutes: [route('r', { hostnames: ['ok.com', 'bad;host'] })] }),
      expected: { kind: 'HTTPRoute', namespace: 'default', name: 'r', field: 'spec.hostnames[1]' },
    },
    {
      name: 'a missing backend',
      input: input({ httpRoutes: [route('r', { rules: [{}, { backendRefs: [{ name: 'gone', port: 80 }] }] })] }),
      expected: { kind: 'HTTPRoute', namespace: 'default', name: 'r', field: 'spec.rules[1].backendRefs[0]' },
    },
  ])('$name', ({ input: i, expected }) => {
    expect(buildGatewayRoutes(i).problems).toEqual([expect.objectContaining(expected)]);
  });
});
