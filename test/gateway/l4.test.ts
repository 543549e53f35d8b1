/**
 * TLSRoute, TCPRoute and UDPRoute in the core and the model: listeners of the stream protocols, who owns a port or an
 * SNI name, status as the spec says, hostile values refused, and what the stream block gets (rendered with the real
 * template). The traffic itself: test/controller/gateway-l4.test.ts (a real nginx).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { buildGatewayRoutes, type GatewayInput } from '../../src/model/gateway/index.js';
import { checkGatewayHostname, checkHost } from '../../src/model/validate.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { GATEWAY_OPTIONS, gateway, gatewayClass, grant, input, listener, route } from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';
type Obj = Record<string, unknown>;

const l4Route = (kind: string, name: string, spec: Obj, extra: { namespace?: string; created?: string } = {}): Obj => ({
  ...route(name, {
    ...(extra.namespace ? { namespace: extra.namespace } : {}),
    ...(extra.created ? { created: extra.created } : {}),
  }),
  kind,
  spec: {
    parentRefs: [{ name: 'gw', namespace: 'default' }],
    rules: [{ backendRefs: [{ name: 'echo', port: 7000 }] }],
    ...spec,
  },
});
const echoService = (protocol = 'TCP', name = 'echo', port = 7000, namespace = 'default'): Obj => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ port, protocol }] },
});
const tls = (name: string, extra: Obj = {}) =>
  listener(name, { port: 443, protocol: 'TLS', tls: { mode: 'Passthrough' }, ...extra });

const listenerConditions = (i: GatewayInput, name: string, gw = 'gw') =>
  buildGatewayRoutes(i)
    .status.gateways.find((g) => g.name === gw)
    ?.listeners.find((l) => l.name === name)
    ?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
const parentConditions = (
  statuses:
    | readonly {
        name: string;
        parents: readonly { conditions: readonly { type: string; status: string; reason: string }[] }[];
      }[]
    | undefined,
  name: string,
) => statuses?.find((r) => r.name === name)?.parents[0]?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('stream listeners', () => {
  it('TLS Passthrough, TCP and UDP are accepted with one route kind each; TLS Terminate is UnsupportedValue', () => {
    const i = input({
      gateways: [
        gateway([
          listener('tcp', { port: 9000, protocol: 'TCP' }),
          listener('udp', { port: 9000, protocol: 'UDP' }),
          listener('tls', { port: 8443, protocol: 'TLS', tls: { mode: 'Passthrough' } }),
          listener('term', {
            port: 8444,
            protocol: 'TLS',
            tls: { mode: 'Terminate', certificateRefs: [{ name: 'x' }] },
          }),
        ]),
      ],
      services: [echoService()],
    });
    const gw = buildGatewayRoutes(i).status.gateways[0];
    expect(gw?.listeners.map((l) => [l.name, l.supportedKinds.map((k) => k.kind)])).toEqual([
      ['tcp', ['TCPRoute']],
      ['udp', ['UDPRoute']],
      ['tls', ['TLSRoute']],
      // refused (Terminate is not served), so it supports no kind
      ['term', []],
    ]);
    // TCP and UDP on one port number are two sockets
    expect(listenerConditions(i, 'udp')).toContain('Conflicted=False/NoConflicts');
    expect(listenerConditions(i, 'term')).toContain('Accepted=False/UnsupportedValue');
    expect(listenerConditions(i, 'tls')).toContain('Programmed=True/Programmed');
  });

  it('allowedRoutes kinds another protocol serves: InvalidRouteKinds, the protocol kind kept', () => {
    const i = input({
      gateways: [gateway([tls('tls', { allowedRoutes: { kinds: [{ kind: 'TCPRoute' }, { kind: 'TLSRoute' }] } })])],
    });
    expect(
      buildGatewayRoutes({ ...i, ports: { http: 80, https: 443, sharedHttps: true } }).status.gateways[0]?.listeners[0]
        ?.supportedKinds,
    ).toEqual([{ group: GROUP, kind: 'TLSRoute' }]);
    expect(listenerConditions(i, 'tls')).toContain('ResolvedRefs=False/InvalidRouteKinds');
  });

  it('TLS on the https port: beside HTTPS only under ssl-passthrough, or alone on a Gateway address of its own', () => {
    const listeners = [
      listener('https', { port: 443, protocol: 'HTTPS', hostname: 'web.test', tls: { certificateRefs: [] } }),
      tls('tls', { hostname: 'pass.test' }),
    ];
    const i = input({ gateways: [gateway(listeners)] });
    // nginx's https port is the http module's
    expect(listenerConditions(i, 'tls')).toContain('Conflicted=True/ProtocolConflict');
    expect(listenerConditions({ ...i, ports: { http: 80, https: 443, sharedHttps: true } }, 'tls')).toContain(
      'Conflicted=False/NoConflicts',
    );
    // on a Gateway's own address, while the Ingress servers listen on one address: alone, not beside HTTPS
    const own = { ports: { http: 80, https: 443, sharedHttps: false, ownAddressFree: true }, addresses: ['10.0.0.9'] };
    expect(listenerConditions({ ...input({ gateways: [gateway([tls('tls')])] }), ...own }, 'tls')).toContain(
      'Programmed=True/Programmed',
    );
    expect(listenerConditions({ ...i, ...own }, 'tls')).toContain('Conflicted=True/ProtocolConflict');
  });

  it('a port of the TCP or UDP services ConfigMap is nginx’s: a listener there is ProtocolConflict', () => {
    const i = {
      ...input({
        gateways: [
          gateway([listener('tcp', { port: 9000, protocol: 'TCP' }), listener('udp', { port: 9001, protocol: 'UDP' })]),
        ],
      }),
      streamPorts: { tcp: [9000], udp: [] },
    };
    expect(listenerConditions(i, 'tcp')).toContain('Conflicted=True/ProtocolConflict');
    expect(listenerConditions(i, 'udp')).toContain('Programmed=True/Programmed');
  });

  it('two TCP listeners on one port, in two Gateways: the older keeps it', () => {
    const tcp = [listener('tcp', { port: 9000, protocol: 'TCP' })];
    const older = {
      ...gateway(tcp, 'a'),
      metadata: { name: 'a', namespace: 'default', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    };
    const newer = {
      ...gateway(tcp, 'b'),
      metadata: { name: 'b', namespace: 'default', generation: 1, creationTimestamp: '2026-01-02T00:00:00Z' },
    };
    const i = input({ gateways: [newer, older] });
    expect(listenerConditions(i, 'tcp', 'a')).toContain('Programmed=True/Programmed');
    expect(listenerConditions(i, 'tcp', 'b')).toContain('Conflicted=True/HostnameConflict');
  });
});

describe('stream routes', () => {
  const gw = gateway([
    listener('tcp', { port: 9000, protocol: 'TCP' }),
    listener('udp', { port: 9001, protocol: 'UDP' }),
    listener('tls', { port: 8443, protocol: 'TLS', hostname: '*.example.com', tls: { mode: 'Passthrough' } }),
  ]);
  const services = [
    echoService(),
    echoService('UDP', 'dns', 53),
    echoService('TCP', 'tls-a', 443),
    echoService('TCP', 'tls-b', 443),
  ];

  it('two TCPRoutes on one listener: both Accepted, both counted, the older served', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tcpRoutes: [
          l4Route(
            'TCPRoute',
            'newer',
            { parentRefs: [{ name: 'gw', sectionName: 'tcp' }] },
            { created: '2026-01-02T00:00:00Z' },
          ),
          l4Route('TCPRoute', 'older', { parentRefs: [{ name: 'gw', sectionName: 'tcp' }] }),
        ],
      }),
    );
    expect(parentConditions(result.status.tcpRoutes, 'newer')).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
    ]);
    expect(result.status.gateways[0]?.listeners.find((l) => l.name === 'tcp')?.attachedRoutes).toBe(2);
    expect(result.streams?.find((s) => s.listener === 'tcp')?.routes.map((r) => r.route.name)).toEqual(['older']);
  });

  it('TLSRoute hostnames intersect the listener’s; a route with none in common is NoMatchingListenerHostname', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tlsRoutes: [
          l4Route('TLSRoute', 'a', {
            hostnames: ['a.example.com', 'a.other.org'],
            rules: [{ backendRefs: [{ name: 'tls-a', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'b', {
            hostnames: ['*.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-b', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'off', { hostnames: ['x.other.org'] }),
        ],
      }),
    );
    expect(
      result.streams?.find((s) => s.listener === 'tls')?.routes.map((r) => `${r.hostname} ${r.route.name}`),
    ).toEqual(['a.example.com a', '*.example.com b']);
    expect(parentConditions(result.status.tlsRoutes, 'off')).toContain('Accepted=False/NoMatchingListenerHostname');
  });

  it('a wildcard before one label (`*.com`) is a hostname, of a listener and of a route', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [
          gateway([listener('tls', { port: 8443, protocol: 'TLS', hostname: '*.com', tls: { mode: 'Passthrough' } })]),
        ],
        services,
        tlsRoutes: [
          l4Route('TLSRoute', 'exact', {
            hostnames: ['abc.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-a', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'wide', {
            hostnames: ['*.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-b', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'widest', { hostnames: ['*.org'] }),
        ],
      }),
    );
    expect(result.status.gateways[0]?.listeners[0]?.conditions.map((c) => `${c.type}=${c.status}`)).toContain(
      'Accepted=True',
    );
    expect(
      result.streams?.find((s) => s.listener === 'tls')?.routes.map((r) => `${r.hostname} ${r.route.name}`),
    ).toEqual(['abc.example.com exact', '*.example.com wide']);
    expect(parentConditions(result.status.tlsRoutes, 'widest')).toContain('Accepted=False/NoMatchingListenerHostname');
  });

  it('a UDPRoute needs a UDP Service port, a TCPRoute a TCP one (BackendNotFound), and a kind its listener serves', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        udpRoutes: [l4Route('UDPRoute', 'u', { parentRefs: [{ name: 'gw', sectionName: 'udp' }] })],
        tcpRoutes: [l4Route('TCPRoute', 't', { parentRefs: [{ name: 'gw', sectionName: 'udp' }] })],
      }),
    );
    expect(parentConditions(result.status.udpRoutes, 'u')).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=False/BackendNotFound',
    ]);
    expect(parentConditions(result.status.tcpRoutes, 't')).toContain('Accepted=False/NotAllowedByListeners');
  });

  it('a backend in another namespace needs a ReferenceGrant naming the route kind', () => {
    const cross = (grants: Obj[]) =>
      parentConditions(
        buildGatewayRoutes(
          input({
            gateways: [
              gateway([
                listener('tcp', { port: 9000, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'All' } } }),
              ]),
            ],
            services,
            referenceGrants: grants,
            tcpRoutes: [
              l4Route(
                'TCPRoute',
                't',
                { rules: [{ backendRefs: [{ name: 'echo', namespace: 'default', port: 7000 }] }] },
                { namespace: 'other' },
              ),
            ],
          }),
        ).status.tcpRoutes,
        't',
      );
    expect(cross([])).toContain('ResolvedRefs=False/RefNotPermitted');
    const to = [{ group: '', kind: 'Service' }];
    expect(cross([grant('default', [{ group: GROUP, kind: 'HTTPRoute', namespace: 'other' }], to)])).toContain(
      'ResolvedRefs=False/RefNotPermitted',
    );
    expect(cross([grant('default', [{ group: GROUP, kind: 'TCPRoute', namespace: 'other' }], to)])).toContain(
      'ResolvedRefs=True/ResolvedRefs',
    );
  });

  it('hostile values are refused, naming the field: UnsupportedValue', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tlsRoutes: [l4Route('TLSRoute', 'bad', { hostnames: ['a.example.com;\n ssl_preread off'] })],
        tcpRoutes: [
          l4Route('TCPRoute', 'named', { hostnames: ['a.example.com'] }),
          l4Route('TCPRoute', 'two', { rules: [{ backendRefs: [] }, { backendRefs: [] }] }),
        ],
      }),
    );
    expect(result.problems.map((p) => `${p.kind} ${p.name} ${p.field}`)).toEqual(
      expect.arrayContaining([
        'TLSRoute bad spec.hostnames[0]',
        'TCPRoute named spec.hostnames',
        'TCPRoute two spec.rules',
      ]),
    );
    for (const name of ['named', 'two'])
      expect(parentConditions(result.status.tcpRoutes, name)).toContain('Accepted=False/UnsupportedValue');
    expect(result.streams?.flatMap((s) => s.routes.map((r) => r.route.name))).toEqual([]);
  });

  it('never throws on arbitrary objects, and what it serves passed the validators', () => {
    const anyValue = fc.anything({ maxDepth: 3 });
    const arbRoute = fc.record({
      hostnames: fc.oneof(fc.array(fc.oneof(fc.string(), fc.constantFrom('a.example.com', '*.example.com'))), anyValue),
      rules: fc.oneof(
        fc.array(
          fc.record({
            backendRefs: fc.oneof(
              fc.array(fc.record({ name: fc.string(), port: anyValue, weight: anyValue })),
              anyValue,
            ),
          }),
        ),
        anyValue,
      ),
    });
    const kinds = fc.constantFrom('TLSRoute', 'TCPRoute', 'UDPRoute');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(kinds, arbRoute), { maxLength: 4 }),
        fc.oneof(fc.string(), anyValue),
        (routes, mode) => {
          const gws = [gateway([...((gw.spec as Obj).listeners as Obj[]), tls('odd', { port: 8445, tls: { mode } })])];
          const of = (kind: string) =>
            routes.flatMap(([k, r], i) =>
              k === kind ? [{ ...l4Route(kind, `r${i}`, {}), spec: { parentRefs: [{ name: 'gw' }], ...r } }] : [],
            );
          const result = buildGatewayRoutes(
            input({
              gateways: gws,
              services,
              tlsRoutes: of('TLSRoute'),
              tcpRoutes: of('TCPRoute'),
              udpRoutes: of('UDPRoute'),
            }),
          );
          for (const served of result.streams ?? [])
            for (const r of served.routes) {
              if (r.hostname !== null) expect(checkGatewayHostname(r.hostname).ok).toBe(true);
              for (const b of r.backends) if (b.kind === 'service') expect(checkHost(b.name).ok).toBe(true);
            }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the stream block', () => {
  it('weighted backends split connections; an unresolved share and an unknown SNI name are closed', async () => {
    const objects = [
      ...serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]),
      echoService(),
      echoService('TCP', 'echo2'),
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'echo' } },
        addressType: 'IPv4',
        ports: [{ port: 7000, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.2'], conditions: { ready: true } }],
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo2-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'echo2' } },
        addressType: 'IPv4',
        ports: [{ port: 7000, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.3'], conditions: { ready: true } }],
      },
      gatewayClass(),
      gateway([
        listener('tcp', { port: 9000, protocol: 'TCP' }),
        listener('tls', { port: 8443, protocol: 'TLS', tls: { mode: 'Passthrough' } }),
      ]),
      l4Route('TCPRoute', 'w', {
        rules: [
          {
            backendRefs: [
              { name: 'echo', port: 7000, weight: 70 },
              { name: 'echo2', port: 7000, weight: 20 },
              { name: 'missing', port: 7000, weight: 10 },
            ],
          },
        ],
      }),
      l4Route('TLSRoute', 's', { hostnames: ['*.example.com'] }),
    ];
    const result = buildModel(snapshotOf(objects), GATEWAY_OPTIONS);
    const text = render(result.model, await loadTemplate());
    const stream = text.slice(text.indexOf('stream {'));
    expect(stream).toContain(
      'split_clients "$remote_addr$remote_port$msec" $ia_gw_split_0 {\n        70.00% "tcp_default_echo_7000";\n        20.00% "tcp_default_echo2_7000";\n        * "ia_gw_closed";',
    );
    expect(stream).toMatch(/listen "9000";\n[^}]*proxy_pass "\$ia_gw_split_0";/);
    expect(stream).toContain('"~*^.+\\\\.example\\\\.com$" "tcp_default_echo_7000";\n        default ia_gw_closed;');
    expect(stream).toContain('server 127.0.0.1:1 down;');
    expect(result.problems.map((p) => `${p.kind} ${p.name} ${p.field}`)).toContain(
      'TCPRoute w spec.rules[0].backendRefs[2]',
    );
  });
});
